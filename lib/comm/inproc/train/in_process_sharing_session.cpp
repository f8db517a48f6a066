// in_process_sharing_session.cpp: InProcessSharingSession.
#include "comm/inproc/train/in_process_sharing_session.h"

#include "comm/inproc/train/in_process_seat.h"
#include "core/errors.h"

namespace gradshare::train {

namespace {
int job_size(const runtime::RunContext& context) {
  return context.size - static_cast<int>(context.config.fault_tolerance.spares);
}
}  // namespace

InProcessSharingSession::InProcessSharingSession(runtime::RunContext& context,
                                                 comm::InProcessJob& job)
    : context_(context), job_(job), job_tree_(job.shared<topology::Tree>("sharing tree", [&] {
        return std::make_unique<topology::Tree>(
            topology::build_tree(context.config.topology, job_size(context)));
      })) {
  GS_CHECK(context.config.fault_tolerance.spares == 0 || job.fault_tolerant(),
           "spares in an in-process job that cannot repair");
  context.size = job_size(context);
  mode_ = topology::resolve_mode(context.config.topology, context.worker_count());
  tree_ = job_tree_;
  for (int rank = 1; rank < context.size; ++rank) live_.push_back(rank);
  if (context.rank >= context.size) {
    context.rank = -1;  // a spare
    return;
  }
  build();
}

void InProcessSharingSession::build() {
  control_ = job_.control_channel_of(context_.rank);
  heartbeats_ = job_.heartbeat_channel_of(context_.rank);
  plane_ = &job_.tree_plane(tree_, context_.rank,
                            static_cast<std::size_t>(context_.config.transport.ring_bytes));
}

bool InProcessSharingSession::wait_for_assignment() {
  const auto repair = wait_for_seat(job_, context_);
  if (repair) adopt(*repair);
  return repair.has_value();
}

RepairOutcome InProcessSharingSession::repair(const std::vector<std::uint8_t>&) {
  const auto repair = job_.repair(context_.rank, repair_replaces(context_.config),
                                  [&](const comm::InProcessRepair& done) {
                                    job_tree_ = repaired_tree(context_.config.topology, mode_,
                                                              job_tree_, done.lost, done.replaced);
                                  });
  adopt(repair);
  return {{repair.lost, repair.replaced, repair.rounds}};
}

void InProcessSharingSession::adopt(const comm::InProcessRepair& repair) {
  tree_ = job_tree_;
  live_ = repair.workers;
  build();
}

void InProcessSharingSession::release_spares() {
  if (context_.is_master()) job_.release_spares();
}

}  // namespace gradshare::train
