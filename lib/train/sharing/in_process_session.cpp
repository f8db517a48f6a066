// sharing/in_process_session.cpp: InProcessSharingSession.
#include "train/sharing/in_process_session.h"

#include "core/errors.h"
#include "topology/mode.h"

namespace gradshare::train {

InProcessSharingSession::InProcessSharingSession(RunContext& context, comm::InProcessJob& job)
    : tree_(topology::build_tree(context.config.topology, context.size)),
      control_(
          job.control_channel(static_cast<double>(context.config.transport.timeout_ms) / 1000.0)),
      plane_(job.tree_plane(tree_, static_cast<std::size_t>(context.config.transport.ring_bytes))) {
  GS_CHECK(context.config.fault_tolerance.spares == 0, "spares in an in-process job");
}

std::vector<int> InProcessSharingSession::live_workers() const {
  std::vector<int> workers;
  for (int rank = 1; rank < tree_.size(); ++rank) workers.push_back(rank);
  return workers;
}

RepairOutcome InProcessSharingSession::repair(const std::vector<std::uint8_t>&) {
  throw core::RuntimeError("a failure repair needs an MPI job under ULFM");
}

}  // namespace gradshare::train
