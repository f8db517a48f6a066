// mpi_job.h: the job as MPI sees it: a communicator (MPI_COMM_WORLD, or a repaired job's) and
// the control channel made on a duplicate of it.
#pragma once

#include <mpi.h>

#include <optional>

#include "comm/mpi/communicator.h"
#include "comm/job.h"

namespace gradshare::comm {

class MpiJob : public Job {
 public:
  // `comm` is not owned: it outlives the job (MPI_COMM_WORLD, or the repaired job's).
  // With start_agreement_timeout (a job that repairs start-up losses) all_started agrees over
  // `comm`, and a process still in that agreement after the timeout ends with a line and exit
  // code 1: a rank that left through MPI_Abort (under ULFM that ends only itself) was seen to
  // leave the others in it for good (train_fault_startup). The timeout must be longer than the
  // MPI start-up deadline: a rank still inside MPI_Init ends the job with its own line then.
  explicit MpiJob(MPI_Comm comm, std::optional<double> start_agreement_timeout = std::nullopt);
  // The job of MPI_COMM_WORLD.
  static MpiJob world() { return MpiJob(MPI_COMM_WORLD); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool fault_tolerant() const override;
  std::unique_ptr<ControlChannel> control_channel(double timeout_seconds) override;
  void barrier() override;
  bool all_started(bool ok) override;
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::optional<double> start_agreement_timeout_;
  int started_ = -1;  // all_started's answer once given (-1: not yet)
};

// The communicator of an MPI job; RuntimeError for a job of another kind (what still needs
// MPI itself: gradient sharing's session, Downpour's transports, the start-up agreement).
MPI_Comm mpi_comm(const Job& job);

}  // namespace gradshare::comm
