// job.h: what a strategy asks of the job it runs in, whether its ranks are MPI processes
// (mpi_job.h) or threads of one test process (in_process_job.h): its rank and size, a control
// channel among all ranks, a barrier. control_channel and barrier are collective: every rank
// calls them in the same order. (The synchronous strategies' workers' group comes with their
// session, train/group_session.h, which rebuilds it after a repair.)
#pragma once

#include <memory>
#include <string>

#include "comm/control_channel.h"
#include "core/errors.h"

namespace gradshare::comm {

// What Job::all_started's disagreement throws: a rank was lost before training began, and the
// job repairs start-up losses (cli/startup_repair.h).
class LostBeforeTraining : public core::RuntimeError {
 public:
  LostBeforeTraining() : core::RuntimeError("a process was lost before training began") {}
};

class Job {
 public:
  virtual ~Job() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether a failed rank can be repaired (an MPI job under `mpirun --with-ft ulfm`).
  virtual bool fault_tolerant() const = 0;
  virtual std::unique_ptr<ControlChannel> control_channel(double timeout_seconds) = 0;
  virtual void barrier() = 0;
  // Every rank (spares too) calls this once, as training begins (ok) or as it leaves the
  // start-up after losing a process (not ok); later calls return the first answer. True when
  // every rank got there and none was lost. Only a job that repairs start-up losses agrees
  // (MpiJob under ULFM, MPIX_Comm_agree); the others return ok.
  virtual bool all_started(bool ok) { return ok; }
  // Ends this rank for a deliberate fault of `kind` (ft/fault_injection.h); never returns. A
  // rank that is a process of its own ends as the kind says: "sigkill" raises SIGKILL, "exit"
  // exits with code 3, "hang" waits until a signal ends it. A thread of a test process ends its
  // thread instead (inproc/in_process_job.h).
  [[noreturn]] virtual void end_by_fault(const std::string& kind);
};

}  // namespace gradshare::comm
