// group_session.h: what the synchronous strategies (the dense all-reduce and parameter
// averaging) run on: the control channel among all ranks and the workers' group, and their
// repair after a process failure. Two kinds: MpiGroupSession (cli/mpi_group_session.h), an MPI
// job's, repaired in-job under `mpirun --with-ft ulfm`, and InProcessGroupSession
// (in_process_group_session.h), threads of one test process.
//
// Ranks are logical, as in a sharing session: a replacement takes the logical rank of the
// process it replaces; after a shrink the workers' group is smaller and its indices shift.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/control_channel.h"
#include "comm/worker_group.h"
#include "train/repair_outcome.h"
#include "train/run_context.h"

namespace gradshare::train {

class GroupSession {
 public:
  virtual ~GroupSession() = default;

  // A spare process (fault_tolerance.spares): it waits, untrained, to replace a failed worker.
  virtual bool is_spare() const { return false; }
  // A spare: waits for a repair (true once it holds a logical rank) or the end of the run.
  virtual bool wait_for_assignment() { return false; }

  virtual comm::ControlChannel& control() = 0;
  // The workers' group (a worker's session only).
  virtual comm::WorkerGroup& workers() = 0;
  // Logical ranks of the live workers, ascending.
  virtual std::vector<int> live_workers() const = 0;
  // Whether a process failure can be repaired.
  virtual bool fault_tolerant() const = 0;
  // After a process failure, collective over every live process: repairs the job per
  // fault_tolerance.on_worker_failure and rebuilds the channel and the group; context.rank
  // becomes this process's logical rank. join_info goes to newcomers (read on the master only).
  virtual RepairOutcome repair(const std::vector<std::uint8_t>& join_info) = 0;
  // The master at the end of the run: spares never called may exit.
  virtual void release_spares() {}
};

// The session context.links.group_session makes for this job.
std::unique_ptr<GroupSession> make_group_session(RunContext& context);

// A synchronous strategy on this rank: the master role, a worker, or a spare that waits to
// replace a worker (then runs `worker` as a replacement). Returns the exit code.
using GroupMaster = int (*)(RunContext&, GroupSession&);
using GroupWorker = int (*)(RunContext&, GroupSession&, bool replacement);
int run_group_strategy(RunContext& context, GroupMaster master, GroupWorker worker);

}  // namespace gradshare::train
