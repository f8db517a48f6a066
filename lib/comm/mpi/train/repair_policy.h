// repair_policy.h: the repair options a job's fault_tolerance section asks for (every
// strategy that repairs in-job under ULFM uses the same).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/mpi/repair.h"
#include "config/experiment_config.h"
#include "train/job_session.h"

namespace gradshare::cli {

// on_worker_failure replace: spares, or MPI_Comm_spawn without them; shrink and abort: shrink
// (abort then stops the run with a checkpoint). The deadline is transport.timeout_ms.
// join_info goes to newcomers (the decider's matters only). Every distributed strategy
// replaces a lost master in the job (train/master_takeover.h).
comm::RepairOptions repair_options(const config::ExperimentConfig& config,
                                   std::vector<std::uint8_t> join_info);

// What a repair did, as the training sessions report it (job_session.h).
train::RepairOutcome repair_outcome(const comm::RepairedJob& repaired);

}  // namespace gradshare::cli
