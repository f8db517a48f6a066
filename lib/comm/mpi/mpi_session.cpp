#include "comm/mpi/mpi_session.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "comm/mpi/ulfm.h"
#include "core/errors.h"

namespace gradshare::cli {

// Exits with `code` after `seconds` unless cancelled first (destroyed).
class ExitDeadline {
 public:
  // `line` ("" for none) is printed before the exit.
  ExitDeadline(double seconds, int code, std::string line) {
    thread_ = std::thread([this, seconds, code, line = std::move(line)] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (cancelled_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; }))
        return;
      if (!line.empty()) std::fprintf(stderr, "gradshare: %s\n", line.c_str());
      std::fflush(nullptr);
      // mpirun may end once every rank has exited, before it has forwarded the line: the rank
      // that prints it leaves after 1 s, the others after 2 s.
      std::this_thread::sleep_for(std::chrono::seconds(line.empty() ? 2 : 1));
      std::_Exit(code);
    });
  }
  ~ExitDeadline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cancelled_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cancelled_;
  bool done_ = false;
  std::thread thread_;
};

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

// Open MPI settings for a job under ULFM (`mpirun --with-ft ulfm` sets OMPI_MCA_mpi_ft_enable),
// each found across the emulated nodes. A value the environment already has wins, and Open MPI
// reads them in MPI_Init.
void set_ulfm_defaults() {
  const char* ft = std::getenv("OMPI_MCA_mpi_ft_enable");
  if (ft == nullptr || std::string(ft) == "0" || std::string(ft) == "false") return;
  // The agreement in every MPIX_Comm_shrink of a repair, on its default binary tree, hung for
  // good on every survivor in 4 of 5 runs when the rank killed was the only one of its node and
  // an inner node of the tree (rank 2 of 6, whose one child is the spare); on the star tree the
  // same kills were repaired in 0.03 s. It only runs in repairs, where the root's p messages
  // cost nothing.
  setenv("OMPI_MCA_coll_ftagree_era_topology", "2", 0);
  // coll/han (hierarchical collectives, which Open MPI picks once ranks span nodes) is not fault
  // tolerant: a rank killed during start-up made every survivor's next MPI_Allreduce segfault
  // inside it, and ranks ending by a signal left mpirun with 0 and no results.
  setenv("OMPI_MCA_coll", "^han", 0);
  // MPI_Finalize's closing PMIx fence over the job's first processes hung for good now and then
  // once a process had been spawned in a repair (1 of about 40 master failovers; backtraces:
  // every first process waiting in the fence, the spawned one in its disconnect from them, which
  // comes after the fence). Under ULFM MPI_Finalize first runs a synchronous barrier over the
  // survivors that flushes their messages, so the fence adds nothing: leave it out.
  setenv("OMPI_MCA_async_mpi_finalize", "1", 0);
}

MpiSession::MpiSession(double start_deadline_seconds) {
  char line[256];
  std::snprintf(line, sizeof line,
                "error: MPI start-up did not finish within %.0f s (transport.timeout_ms): a rank "
                "was probably lost while MPI started; nothing was trained: rerun the job",
                start_deadline_seconds);
  start_deadline_ = std::make_unique<ExitDeadline>(start_deadline_seconds, core::kExitRuntimeFailure,
                                                   launcher_rank() == 0 ? line : "");
  set_ulfm_defaults();
  // MULTIPLE: under fault tolerance a watchdog thread may revoke a communicator whose repair
  // hangs (comm/repair.cpp); everything else stays on the main thread.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

void MpiSession::started() { start_deadline_.reset(); }

MpiSession::~MpiSession() {
  start_deadline_.reset();
  std::optional<ExitDeadline> finalize;
  if (comm::fault_tolerance_active())
    finalize.emplace(kFinalizeDeadlineSeconds, exit_code_,
                     "MPI_Finalize did not return within " + std::to_string(kFinalizeDeadlineSeconds) +
                         " s; exiting with " + std::to_string(exit_code_));
  MPI_Finalize();
}

}  // namespace gradshare::cli
