// mpi_group_session.h: the synchronous strategies' session over an MPI job
// (train/group_session.h): the control channel on the job's communicator and the workers' group
// split from it; under `mpirun --with-ft ulfm` both are rebuilt after a repair (comm/repair.h).
// fault_tolerance.spares: the last world ranks are spares; they wait until a repair hands them
// a dead worker's logical rank.
#pragma once

#include <memory>
#include <vector>

#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_job.h"
#include "comm/mpi/mpi_worker_group.h"
#include "comm/mpi/repairable_job.h"
#include "train/group_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class MpiGroupSession : public GroupSession {
 public:
  // Collective over context.job's communicator. Sets context.size to the job's size (spares
  // excluded) and context.rank to the logical rank (-1 on a spare).
  explicit MpiGroupSession(runtime::RunContext& context);
  // A process spawned to replace a dead worker: adopts the job it joined; collective with the
  // survivors' repair().
  MpiGroupSession(runtime::RunContext& context, comm::RepairedJob& joined);

  bool is_spare() const override { return job_.is_spare(); }
  bool wait_for_assignment() override;
  comm::ControlChannel& control() override { return *control_; }
  comm::WorkerGroup& workers() override;
  std::vector<int> live_workers() const override { return job_.live_workers(); }
  bool fault_tolerant() const override { return fault_tolerant_; }
  RepairOutcome repair(const std::vector<std::uint8_t>& join_info) override;
  void release_spares() override { job_.release_spares(); }
  // RMA windows or two-sided messages, as transport.data_plane says for where the ranks are
  // (downpour/mpi_transport.h).
  std::unique_ptr<DownpourTransport> downpour_transport(runtime::RunContext& context,
                                                        const DownpourLayout& layout) override;

  // The job's communicator now (a repair replaces it) and the logical rank of each of its ranks.
  MPI_Comm job_comm() const { return job_.job(); }
  const std::vector<int>& logical() const { return job_.logical(); }

 private:
  // The channel and the group on the job's current communicator (collective over it).
  void build();

  runtime::RunContext& context_;
  bool fault_tolerant_;
  comm::RepairableJob job_;
  std::unique_ptr<comm::MpiControlChannel> control_;
  std::unique_ptr<comm::MpiWorkerGroup> workers_;  // null on the master
};

}  // namespace gradshare::train
