// mpi_job.cpp: MpiJob and MpiWorkerGroup.
#include "comm/mpi_job.h"

#include <limits>
#include <string>

#include "comm/mpi_control_channel.h"
#include "comm/mpi_error.h"
#include "comm/ulfm.h"
#include "core/errors.h"

namespace gradshare::comm {

namespace {
int count_of(std::size_t size) {
  GS_CHECK(size <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "all-reduce of " + std::to_string(size) + " elements");
  return static_cast<int>(size);
}
}  // namespace

void MpiWorkerGroup::allreduce_sum(std::span<float> values) {
  const CollectiveWatchdog::Watch watch(watchdog_, "the workers' all-reduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_FLOAT, MPI_SUM,
                          comm_.get()),
            "MPI_Allreduce");
}

void MpiWorkerGroup::allreduce_max(std::span<std::int32_t> values) {
  const CollectiveWatchdog::Watch watch(watchdog_, "the workers' all-reduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_INT32_T,
                          MPI_MAX, comm_.get()),
            "MPI_Allreduce");
}

void MpiWorkerGroup::allreduce_max(std::span<std::uint64_t> values) {
  const CollectiveWatchdog::Watch watch(watchdog_, "the workers' all-reduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_UINT64_T,
                          MPI_MAX, comm_.get()),
            "MPI_Allreduce");
}

void MpiWorkerGroup::broadcast(std::span<std::uint8_t> bytes, int root) {
  const CollectiveWatchdog::Watch watch(watchdog_, "the workers' broadcast");
  check_mpi(MPI_Bcast(bytes.data(), count_of(bytes.size()), MPI_BYTE, root, comm_.get()),
            "MPI_Bcast");
}

void MpiWorkerGroup::barrier() {
  const CollectiveWatchdog::Watch watch(watchdog_, "the workers' barrier");
  check_mpi(MPI_Barrier(comm_.get()), "MPI_Barrier");
}

MpiJob::MpiJob(MPI_Comm comm, double timeout_seconds)
    : comm_(comm), timeout_seconds_(timeout_seconds) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

std::unique_ptr<ControlChannel> MpiJob::control_channel(double timeout_seconds) {
  return std::make_unique<MpiControlChannel>(comm_, timeout_seconds);
}

std::unique_ptr<WorkerGroup> MpiJob::worker_group() {
  MPI_Comm workers = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, rank_ == 0 ? MPI_UNDEFINED : 1, rank_, &workers),
            "MPI_Comm_split");
  if (workers == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiWorkerGroup>(workers, timeout_seconds_);
}

bool MpiJob::fault_tolerant() const { return fault_tolerance_active(); }

void MpiJob::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

MPI_Comm mpi_comm(const Job& job) {
  const auto* mpi = dynamic_cast<const MpiJob*>(&job);
  GS_CHECK(mpi != nullptr, "this part of the run needs an MPI job");
  return mpi->comm();
}

}  // namespace gradshare::comm
