// sharing/session.h: the communication a gradient-sharing process runs on: the topology tree,
// the control channel and the data plane, and their rebuild after a process failure. Two kinds:
// MpiSharingSession (sharing/mpi_session.h), processes of an MPI job with ULFM repair, and
// InProcessSharingSession (sharing/in_process_session.h), threads of one test process.
//
// Ranks are logical: a replacement takes the logical rank of the process it replaces, so
// version vectors, partition bookkeeping and the tree keep their numbering.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "comm/data_plane.h"
#include "config/experiment_config.h"
#include "ft/process_identity.h"
#include "topology/mode.h"
#include "topology/tree.h"
#include "train/repair_outcome.h"

namespace gradshare::train {

class SharingSession {
 public:
  virtual ~SharingSession() = default;

  // A spare process (fault_tolerance.spares): it waits, untrained, to replace a failed worker.
  virtual bool is_spare() const { return false; }
  // A spare: waits for a repair (true once it holds a logical rank) or the end of the run.
  virtual bool wait_for_assignment() { return false; }

  virtual comm::ControlChannel& control() = 0;
  // What a worker's heartbeat thread sends on and the master reads heartbeats from: a channel
  // of its own, since another thread uses it (ft/heartbeat.h). nullptr where MPI cannot be
  // called from two threads: heartbeats then go over control() from the training thread.
  virtual comm::ControlChannel* heartbeats() = 0;
  virtual comm::DataPlane& plane() = 0;
  virtual const topology::Tree& tree() const = 0;
  // Logical ranks of the live workers, ascending.
  virtual std::vector<int> live_workers() const = 0;
  // Whether a process failure can be repaired (an MPI job under ULFM).
  virtual bool fault_tolerant() const = 0;
  // On the master: host and pid of every live job process, by logical rank (empty where
  // processes cannot be told apart).
  virtual const std::map<int, ft::ProcessIdentity>& processes() const = 0;

  // After a process failure, collective over every live process: repairs the job per
  // fault_tolerance.on_worker_failure and rebuilds the tree and both planes; context.rank
  // becomes this process's logical rank. join_info goes to newcomers (read on the master only).
  virtual RepairOutcome repair(const std::vector<std::uint8_t>& join_info) = 0;
  // The master at the end of the run: spares never called may exit.
  virtual void release_spares() = 0;
};

// What replicas keep of the messages they applied for a resync (fault_tolerance.keep_bytes),
// or nothing where no failure can be repaired.
std::optional<std::size_t> keep_budget(const SharingSession& session,
                                       const config::ExperimentConfig& config);

// The tree after `lost` died (re-attached as topology.remap says) and `replaced` came back (each
// list in ascending order).
topology::Tree repaired_tree(const config::TopologyConfig& config, topology::Mode mode,
                             topology::Tree tree, const std::vector<int>& lost,
                             const std::vector<int>& replaced);

}  // namespace gradshare::train
