// in_process_group_session.cpp: InProcessGroupSession.
#include "comm/inproc/train/in_process_group_session.h"

#include "comm/inproc/train/in_process_downpour_transport.h"
#include "comm/inproc/train/in_process_seat.h"
#include "core/errors.h"

namespace gradshare::train {

InProcessGroupSession::InProcessGroupSession(runtime::RunContext& context, comm::InProcessJob& job)
    : context_(context), job_(job) {
  GS_CHECK(context.config.fault_tolerance.spares == 0 || job.fault_tolerant(),
           "spares in an in-process job that cannot repair");
  context.size -= static_cast<int>(context.config.fault_tolerance.spares);
  for (int rank = 1; rank < context.size; ++rank) live_.push_back(rank);
  if (context.rank >= context.size) {
    context.rank = -1;  // a spare
    return;
  }
  control_ = job_.control_channel_of(context.rank);
  if (!context.is_master()) workers_ = job_.worker_group_of(live_, context.rank);
}

comm::WorkerGroup& InProcessGroupSession::workers() {
  GS_CHECK(workers_ != nullptr, "the master is not in the workers' group");
  return *workers_;
}

bool InProcessGroupSession::wait_for_assignment() {
  const auto repair = wait_for_seat(job_, context_);
  if (repair) adopt(*repair);
  return repair.has_value();
}

RepairOutcome InProcessGroupSession::repair(const std::vector<std::uint8_t>&) {
  const bool replace = repair_replaces(context_.config);
  control_.reset();
  workers_.reset();
  const auto repair = job_.repair(context_.rank, replace, [](const auto&) {});
  adopt(repair);
  return last_repair_;
}

void InProcessGroupSession::adopt(const comm::InProcessRepair& repair) {
  last_repair_ = {repair.lost, repair.replaced, repair.rounds};
  live_ = repair.workers;
  control_ = job_.control_channel_of(context_.rank);
  if (!context_.is_master()) workers_ = job_.worker_group_of(live_, context_.rank);
}

void InProcessGroupSession::release_spares() {
  if (context_.is_master()) job_.release_spares();
}

std::unique_ptr<DownpourTransport> InProcessGroupSession::downpour_transport(
    runtime::RunContext&, const DownpourLayout& layout) {
  return make_in_process_downpour_transport(job_, layout);
}

}  // namespace gradshare::train
