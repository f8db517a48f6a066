// in_process_seat.h: what both in-process sessions (in_process_group_session.h,
// in_process_sharing_session.h) do alike with their job: a spare thread's wait for the repair
// that gives it a logical rank, and the policy a repair follows.
#pragma once

#include <optional>

#include "comm/inproc/in_process_job.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// A spare: waits for a repair that gives it a logical rank (then context.rank) and returns that
// repair; nothing when the run ended without needing it.
std::optional<comm::InProcessRepair> wait_for_seat(comm::InProcessJob& job,
                                                   runtime::RunContext& context);

// Whether a repair replaces the failed ranks (fault_tolerance.on_worker_failure: replace) rather
// than shrinking; an in-process job replaces from spares only (spawning needs MPI).
bool repair_replaces(const config::ExperimentConfig& config);

}  // namespace gradshare::train
