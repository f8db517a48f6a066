// mpi_group_session.cpp: MpiGroupSession.
#include "comm/mpi/train/mpi_group_session.h"

#include "comm/mpi/mpi_error.h"
#include "comm/mpi/train/downpour/mpi_transport.h"
#include "comm/mpi/train/repair_policy.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"
#include "train/downpour/transport.h"
#include "train/join_info.h"
#include "runtime/worker_log.h"

namespace gradshare::train {

MpiGroupSession::MpiGroupSession(runtime::RunContext& context)
    : context_(context),
      fault_tolerant_(comm::fault_tolerance_active()),
      job_(comm::mpi_comm(*context.job), static_cast<int>(context.config.fault_tolerance.spares)) {
  context.size -= static_cast<int>(context.config.fault_tolerance.spares);
  context.rank = job_.my_logical();
  if (!is_spare()) build();
}

MpiGroupSession::MpiGroupSession(runtime::RunContext& context, comm::RepairedJob& joined)
    : context_(context), fault_tolerant_(true), job_(joined) {
  last_repair_ = cli::repair_outcome(joined);
  context.rank = job_.my_logical();
  build();
}

comm::WorkerGroup& MpiGroupSession::workers() {
  GS_CHECK(workers_ != nullptr, "the master is not in the workers' group");
  return *workers_;
}

void MpiGroupSession::build() {
  const double timeout = static_cast<double>(context_.config.transport.timeout_ms) / 1000.0;
  control_ = std::make_unique<comm::MpiControlChannel>(job_.job(), timeout, job_.logical());
  MPI_Comm group = MPI_COMM_NULL;
  const bool master = job_.my_logical() == 0;
  comm::check_mpi(MPI_Comm_split(job_.job(), master ? MPI_UNDEFINED : 1, job_.my_logical(), &group),
                  "MPI_Comm_split");
  workers_.reset();
  if (group != MPI_COMM_NULL) workers_ = std::make_unique<comm::MpiWorkerGroup>(group, timeout);
}

bool MpiGroupSession::wait_for_assignment() {
  comm::RepairedJob repaired;
  if (!job_.wait_for_assignment(cli::repair_options(context_.config, {}), &repaired)) return false;
  last_repair_ = cli::repair_outcome(repaired);
  context_.rank = job_.my_logical();
  build();
  // This process's log is now the worker's (a new master's log is set up by its takeover).
  if (!last_repair_.became_master) runtime::log_as_worker(context_);
  return true;
}

RepairOutcome MpiGroupSession::repair(const std::vector<std::uint8_t>& join_info) {
  comm::stop_freeing_communicators();
  // Revoked, so peers blocked on the old job (a receive, an all-reduce) return.
  if (control_) comm::revoke(control_->comm());
  if (workers_) comm::revoke(workers_->comm());
  control_.reset();
  workers_.reset();
  // Any worker may decide the repair once the master is lost: each offers the join info.
  const auto repaired = job_.repair(cli::repair_options(
      context_.config, join_info.empty() && !is_spare() ? train::join_info(context_) : join_info));
  context_.rank = job_.my_logical();
  if (!is_spare()) build();
  last_repair_ = cli::repair_outcome(repaired);
  return last_repair_;
}

std::unique_ptr<DownpourTransport> MpiGroupSession::downpour_transport(
    runtime::RunContext& context, const DownpourLayout& layout) {
  return cli::make_mpi_downpour_transport(context, *this, layout);
}

}  // namespace gradshare::train
