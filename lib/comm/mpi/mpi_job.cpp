// mpi_job.cpp: MpiJob.
#include "comm/mpi/mpi_job.h"

#include "comm/collective_watchdog.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"

namespace gradshare::comm {

MpiJob::MpiJob(MPI_Comm comm, std::optional<double> start_agreement_timeout)
    : comm_(comm), start_agreement_timeout_(start_agreement_timeout) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

std::unique_ptr<ControlChannel> MpiJob::control_channel(double timeout_seconds) {
  return std::make_unique<MpiControlChannel>(comm_, timeout_seconds);
}

bool MpiJob::fault_tolerant() const { return fault_tolerance_active(); }

void MpiJob::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

bool MpiJob::all_started(bool ok) {
  if (!start_agreement_timeout_) return ok;
  if (started_ < 0) {
    CollectiveWatchdog watchdog(*start_agreement_timeout_);
    const CollectiveWatchdog::Watch watch(watchdog, "the start-up's closing agreement");
    started_ = agree(comm_, ok) ? 1 : 0;
  }
  return started_ == 1;
}

MPI_Comm mpi_comm(const Job& job) {
  const auto* mpi = dynamic_cast<const MpiJob*>(&job);
  GS_CHECK(mpi != nullptr, "this part of the run needs an MPI job");
  return mpi->comm();
}

}  // namespace gradshare::comm
