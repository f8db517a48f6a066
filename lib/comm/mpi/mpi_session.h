// mpi_session.h: MPI_Init and MPI_Finalize of a `train` run, each with a deadline, because
// under ULFM (`mpirun --with-ft ulfm`) Open MPI 5.0.7 lets both wait forever (measured):
//   - a rank killed while MPI starts leaves the others in MPI_Init (its start-up exchange
//     waits for the dead rank; the launcher, told to tolerate failures, does not end the job);
//   - after processes failed and were replaced, MPI_Finalize sometimes never returns on any
//     rank, the run's results written.
// Past the start-up deadline a rank exits 1 (rank 0 with one line saying why); past the
// finalize deadline it exits with the run's code. The start-up deadline lasts until the ranks
// have agreed once (started()): a rank that got through MPI_Init waits in that first agreement
// for the others, so rank 0 is the one to say why.
#pragma once

#include <memory>

namespace gradshare::cli {

// This process's rank as the launcher announces it, before MPI_Init (0 when not launched by
// mpirun or srun).
int launcher_rank();

class MpiSession {
 public:
  // `start_deadline_seconds`: how long MPI_Init may take (transport.timeout_ms).
  explicit MpiSession(double start_deadline_seconds);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession();

  // Every rank got through MPI start-up (the first collective of the run succeeded).
  void started();

  // The run's exit code, for the finalize deadline; returns it.
  int leave_with(int code) {
    exit_code_ = code;
    return code;
  }

 private:
  static constexpr int kFinalizeDeadlineSeconds = 30;
  std::unique_ptr<class ExitDeadline> start_deadline_;
  int exit_code_ = 1;  // an exception left the run
};

}  // namespace gradshare::cli
