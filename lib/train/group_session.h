// group_session.h: what the synchronous strategies (the dense all-reduce and parameter
// averaging) run on: beyond the job session (job_session.h: the control channel, the repair,
// the spares), the workers' group, which a repair rebuilds. Two kinds: MpiGroupSession
// (comm/mpi/train/mpi_group_session.h), an MPI job's, repaired in-job under
// `mpirun --with-ft ulfm`, and InProcessGroupSession (comm/inproc/train/), threads of one test
// process. After a shrink the workers' group is smaller and its indices shift.
#pragma once

#include <memory>

#include "comm/worker_group.h"
#include "train/job_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class DownpourTransport;
class DownpourLayout;

class GroupSession : public JobSession {
 public:
  // The workers' group (a worker's session only).
  virtual comm::WorkerGroup& workers() = 0;
  // Downpour's transport (downpour/transport.h) on the job as it is now (after a repair: the
  // repaired one), collective over it; `layout` must outlive it.
  virtual std::unique_ptr<DownpourTransport> downpour_transport(runtime::RunContext& context,
                                                                const DownpourLayout& layout) = 0;
};

// A synchronous strategy on this rank, on the session context.links.group_session makes: the
// master role, a worker, or a spare that waits to replace a worker (then runs `worker` as a
// replacement). Returns the exit code.
using GroupMaster = int (*)(runtime::RunContext&, GroupSession&);
using GroupWorker = int (*)(runtime::RunContext&, GroupSession&, bool replacement);
int run_group_strategy(runtime::RunContext& context, GroupMaster master, GroupWorker worker);

}  // namespace gradshare::train
