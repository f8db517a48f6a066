// sharing/session.h: the communication a gradient-sharing process runs on: the topology tree,
// the control channel and the data plane, and their rebuild after a process failure. Two kinds:
// MpiSharingSession (comm/mpi/train/mpi_sharing_session.h), processes of an MPI job with ULFM
// repair, and InProcessSharingSession (comm/inproc/train/), threads of one test process.
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
#include "train/job_session.h"

namespace gradshare::train {

// Beyond the job session (job_session.h; its repair also rebuilds the tree and both planes):
class SharingSession : public JobSession {
 public:
  // What a worker's heartbeat thread sends on and the master reads heartbeats from: a channel
  // of its own, since another thread uses it (ft/heartbeat.h). nullptr where MPI cannot be
  // called from two threads: heartbeats then go over control() from the training thread.
  virtual comm::ControlChannel* heartbeats() = 0;
  virtual comm::DataPlane& plane() = 0;
  virtual const topology::Tree& tree() const = 0;
  // On the master: host and pid of every live job process, by logical rank (empty where
  // processes cannot be told apart).
  virtual const std::map<int, ft::ProcessIdentity>& processes() const = 0;
  // Whether this process and the master's are on different nodes (a network between them).
  virtual bool master_on_another_node() const = 0;
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
