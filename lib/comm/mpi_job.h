// mpi_job.h: the job as MPI sees it: a communicator (MPI_COMM_WORLD, or a repaired job's), the
// control channel and workers' group made on duplicates or splits of it.
#pragma once

#include <mpi.h>

#include "comm/collective_watchdog.h"
#include "comm/communicator.h"
#include "comm/job.h"

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
};

class MpiJob : public Job {
 public:
  // `comm` is not owned: it outlives the job (MPI_COMM_WORLD, or the repaired job's).
  // timeout_seconds (transport.timeout_ms) bounds the workers' group's collectives.
  MpiJob(MPI_Comm comm, double timeout_seconds);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool fault_tolerant() const override;
  std::unique_ptr<ControlChannel> control_channel(double timeout_seconds) override;
  std::unique_ptr<WorkerGroup> worker_group() override;
  void barrier() override;
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  double timeout_seconds_;
  int rank_ = 0;
  int size_ = 1;
};

// The communicator of an MPI job; RuntimeError for a job of another kind (what still needs
// MPI itself: gradient sharing's session, Downpour's transports, the start-up agreement).
MPI_Comm mpi_comm(const Job& job);

}  // namespace gradshare::comm
