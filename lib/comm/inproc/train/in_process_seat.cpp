// in_process_seat.cpp: wait_for_seat, repair_replaces (see in_process_seat.h).
#include "comm/inproc/train/in_process_seat.h"

#include "core/errors.h"

namespace gradshare::train {

std::optional<comm::InProcessRepair> wait_for_seat(comm::InProcessJob& job,
                                                   runtime::RunContext& context) {
  auto assignment = job.wait_as_spare();
  if (!assignment) return std::nullopt;
  context.rank = assignment->logical;
  return std::move(assignment->repair);
}

bool repair_replaces(const config::ExperimentConfig& config) {
  const bool replace = config.fault_tolerance.on_worker_failure == "replace";
  GS_CHECK(!replace || config.fault_tolerance.spares > 0,
           "an in-process job replaces a failed rank from spares only (spawning needs MPI)");
  return replace;
}

}  // namespace gradshare::train
