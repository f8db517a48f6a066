// mpi_sharing_session.h: a gradient-sharing session over an MPI job: the job's communicators,
// the tree, the control channel and the data plane, and their repair after a process failure
// (comm/repair.h).
//
// After a repair without replacement the job communicator's ranks shift and the planes
// translate logical ranks.
// fault_tolerance.spares: the last world ranks are spares; they wait (no planes, no training)
// until a repair hands them a dead worker's logical rank.
// Without fault tolerance (no `mpirun --with-ft ulfm`) the data plane runs on the topology's
// distributed-graph communicator; with it, on the job communicator itself, because ULFM cannot
// repair topology communicators (Open MPI warns about every topo module).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/control_channel.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/data_plane.h"
#include "comm/mpi/repair.h"
#include "comm/mpi/repairable_job.h"
#include "topology/mode.h"
#include "topology/tree.h"
#include "runtime/run_context.h"
#include "train/sharing/session.h"

namespace gradshare::train {

class MpiSharingSession : public SharingSession {
 public:
  // Collective over context.world. Sets context.size to the job's size (spares excluded).
  explicit MpiSharingSession(runtime::RunContext& context);
  // A process spawned to replace a dead worker: adopts the job it joined; collective with the
  // survivors' repair().
  MpiSharingSession(runtime::RunContext& context, comm::RepairedJob joined);
  ~MpiSharingSession() override;

  bool is_spare() const override { return job_.is_spare(); }
  comm::ControlChannel& control() override { return *control_; }
  comm::ControlChannel* heartbeats() override { return heartbeats_.get(); }
  comm::DataPlane& plane() override { return *plane_; }
  const topology::Tree& tree() const override { return tree_; }
  std::vector<int> live_workers() const override { return job_.live_workers(); }
  bool fault_tolerant() const override { return fault_tolerant_; }
  const std::map<int, ft::ProcessIdentity>& processes() const override { return processes_; }
  bool master_on_another_node() const override { return master_on_another_node_; }

  // After a process failure, collective over every live process, spares included: repairs the
  // communicators per fault_tolerance.on_worker_failure (abort repairs like shrink, so the master
  // can still checkpoint), re-attaches the tree, rebuilds both planes. context.rank becomes this
  // process's logical rank (a spare's, when it took one; 0 on a worker that became the master).
  // join_info goes to newcomers (the deciding rank's; empty: this rank's own).
  RepairOutcome repair(const std::vector<std::uint8_t>& join_info) override;
  // A spare: waits for a repair (true once it holds a logical rank) or the end of the run.
  bool wait_for_assignment() override;
  // The master at the end of the run: spares never called may exit.
  void release_spares() override;

 private:
  // After the job's communicators changed (a repair, or joining one): the tree and the planes.
  void adopt(const comm::RepairedJob& repaired);
  // The tree of logical rank `holder` to every process of the job (collective over it).
  void share_tree(int holder);
  void build_planes();
  // Host and pid of every job process to the master (collective over the job).
  void gather_identities();

  runtime::RunContext& context_;
  topology::Mode mode_;
  bool fault_tolerant_;
  comm::RepairableJob job_;
  topology::Tree tree_;
  // Whether tree_ is the job's (false on a spare and a spawned process until they join).
  bool tree_current_ = false;
  comm::Communicator graph_;  // the tree as a dist-graph communicator (runs without ULFM)
  std::unique_ptr<comm::MpiControlChannel> control_;
  std::unique_ptr<comm::MpiControlChannel> heartbeats_;  // null without MPI_THREAD_MULTIPLE
  std::unique_ptr<comm::DataPlane> plane_;
  std::map<int, ft::ProcessIdentity> processes_;
  bool master_on_another_node_ = false;
};

}  // namespace gradshare::train
