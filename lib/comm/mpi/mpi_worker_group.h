// mpi_worker_group.h: the workers' group (comm/worker_group.h) on an MPI communicator of their
// own, each collective under the collective watchdog's deadline. The float sum is the ring of
// comm/ring_allreduce.h, whose bits do not depend on where the members run.
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/collective_watchdog.h"
#include "comm/mpi/communicator.h"
#include "comm/worker_group.h"

namespace gradshare::comm {

class MpiWorkerGroup : public WorkerGroup {
 public:
  // Takes ownership of `comm` (the group's communicator). A collective still running after
  // timeout_seconds ends the process (comm/collective_watchdog.h).
  MpiWorkerGroup(MPI_Comm comm, double timeout_seconds)
      : comm_(comm), watchdog_(timeout_seconds) {}
  int index() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void allreduce_sum(std::span<float> values) override;
  void allreduce_max(std::span<std::int32_t> values) override;
  void allreduce_max(std::span<std::uint64_t> values) override;
  void broadcast(std::span<std::uint8_t> bytes, int root) override;
  void barrier() override;
  MPI_Comm comm() const { return comm_.get(); }

 private:
  Communicator comm_;
  CollectiveWatchdog watchdog_;
  std::vector<float> scratch_;  // the ring all-reduce's receive buffer
};

}  // namespace gradshare::comm
