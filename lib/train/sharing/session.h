// sharing/session.h: the communication a gradient-sharing process runs on — the job's
// communicators, the topology tree, the control plane and the data plane — and their rebuild
// after a process failure (comm/repair.h).
//
// Ranks are logical: a replacement takes the logical rank of the process it replaces, so
// version vectors, partition bookkeeping and the tree keep their numbering; after a repair
// without replacement the job communicator's ranks shift and the planes translate.
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

#include "comm/communicator.h"
#include "comm/control_channel.h"
#include "comm/mpi_control_channel.h"
#include "comm/data_plane.h"
#include "comm/repair.h"
#include "topology/mode.h"
#include "topology/tree.h"
#include "train/run_context.h"

namespace gradshare::train {

// Where a process runs, so the master can stop one that hangs.
struct ProcessIdentity {
  std::string host;
  int pid = 0;
};

class SharingSession {
 public:
  // Collective over context.world. Sets context.size to the job's size (spares excluded).
  explicit SharingSession(RunContext& context);
  // A process spawned to replace a dead worker: adopts the job it joined; collective with the
  // survivors' repair().
  SharingSession(RunContext& context, comm::RepairedJob joined);
  ~SharingSession();

  bool is_spare() const { return !comm_; }
  comm::ControlChannel& control() { return *control_; }
  comm::DataPlane& plane() { return *plane_; }
  const topology::Tree& tree() const { return tree_; }
  // Logical ranks of the live workers, ascending.
  std::vector<int> live_workers() const;
  bool fault_tolerant() const { return fault_tolerant_; }
  // On the master: host and pid of every live job process, by logical rank.
  const std::map<int, ProcessIdentity>& processes() const { return processes_; }

  // After a process failure, collective over every live process, spares included: repairs the
  // communicators per fault_tolerance.on_worker_failure (abort repairs like shrink, so the master
  // can still checkpoint), re-attaches the tree, rebuilds both planes. context.rank becomes this
  // process's logical rank (a spare's, when it took one). join_info goes to newcomers (read on
  // the master only).
  comm::RepairedJob repair(const std::vector<std::uint8_t>& join_info);
  // A spare: waits for a repair (true once it holds a logical rank) or the end of the run.
  bool wait_for_assignment();
  // The master at the end of the run: spares never called may exit.
  void release_spares();

 private:
  void adopt(comm::RepairedJob& job);
  // The master's tree to every process of the job (collective over it).
  void share_tree();
  void build_planes();
  // Host and pid of every job process to the master (collective over the job).
  void gather_identities();

  RunContext& context_;
  topology::Mode mode_;
  bool fault_tolerant_;
  comm::Communicator universe_;  // every live process, spares included
  comm::Communicator comm_;      // the job's live processes in logical order (null: spare)
  std::vector<int> logical_;     // logical rank of each rank of comm_
  std::vector<int> spares_;      // universe ranks of the waiting spares
  topology::Tree tree_;
  comm::Communicator graph_;  // the tree as a dist-graph communicator (runs without ULFM)
  std::unique_ptr<comm::MpiControlChannel> control_;
  std::unique_ptr<comm::DataPlane> plane_;
  std::map<int, ProcessIdentity> processes_;
};

// The tree after `lost` died and `replaced` came back (each list in ascending order).
topology::Tree repaired_tree(const config::TopologyConfig& config, topology::Mode mode,
                             topology::Tree tree, const std::vector<int>& lost,
                             const std::vector<int>& replaced);

}  // namespace gradshare::train
