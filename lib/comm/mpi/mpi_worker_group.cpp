// mpi_worker_group.cpp: MpiWorkerGroup.
#include "comm/mpi/mpi_worker_group.h"

#include <limits>
#include <string>

#include "comm/mpi/mpi_error.h"
#include "comm/mpi/ring_allreduce.h"
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
  ring_allreduce_sum(comm_.get(), values, scratch_);
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

}  // namespace gradshare::comm
