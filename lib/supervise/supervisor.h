// supervisor.h: `gradshare run`, a job that restarts itself after an abnormal end.
//
//   gradshare run [--max-restarts K] [--backoff S] [--max-backoff S] [--hang-seconds H]
//                 -- COMMAND [ARG ...]
//
// COMMAND (typically `mpirun -n N gradshare train CONFIG run.dir=DIR ...`) is started as a
// child process and waited for; its exit code decides:
//   0                 the job is done: exit 0 — if it wrote its "final" record to
//                     DIR/metrics.jsonl; without one it counts as a crash (under `mpirun
//                     --with-ft ulfm` a rank killed by a signal, the master at the very end
//                     included, does not make mpirun fail)
//   2, 126, 127       bad input, or COMMAND cannot be executed: no restart (exit 2)
//   3                 the divergence guard ended the run: no restart (exit 3)
//   75                the job stopped after a checkpoint: if this supervisor got the stop signal
//                     (passed on to COMMAND), exit 75 so the batch system requeues; otherwise
//                     (the job asked for a requeue by itself) restart
//   anything else     a crash (a lost master, a rank killed, MPI failure): restart after a
//                     back-off of S, 2S, 4S ... seconds (at most --max-backoff), at most K times;
//                     then exit with the last code
// The code is the master's when COMMAND itself was ended by a signal after the master had
// recorded how it ended (an "exit" record in DIR/metrics.jsonl): Open MPI 5.0.7's prterun was
// seen to abort in its teardown after the master had exited 75.
// Every restart resumes the same run: COMMAND must name it with run.dir=DIR (checkpoint.resume
// auto finds the newest good checkpoint there). Before a restart the supervisor removes a run
// lock the ended attempt left behind (one made since the attempt started: the master may have
// run on another host, where the lock's owner cannot be checked), and appends a "restart"
// record to DIR/metrics.jsonl. A launcher that stays H seconds (default 60) after every process
// it started has ended (Open MPI 5.0.7's prterun was seen to, after a rank died in MPI_Init) is
// killed and counts as a crash. SIGTERM, SIGUSR1 and SIGINT are passed on to COMMAND; one that
// arrives during a back-off ends the supervisor with 75 at once.
#pragma once

#include <string>
#include <vector>

namespace gradshare::supervise {

struct RestartPolicy {
  int max_restarts = 3;
  double backoff_seconds = 5;
  double max_backoff_seconds = 300;
  double hang_seconds = 60;
};

// What to do after an attempt ended with `exit_code`.
enum class Next { kDone, kRestart, kGiveUp };
// `stop_signalled`: this supervisor received a stop signal during the attempt.
Next decide(int exit_code, bool stop_signalled);

// Seconds to wait before restart number `restart` (1-based).
double backoff_before(const RestartPolicy& policy, int restart);

// The DIR of the last run.dir=DIR argument of `command`; UserError when there is none.
std::string run_dir_of(const std::vector<std::string>& command);

// Parses the arguments after `run`; returns the exit code of the supervised job.
int run_command(const std::vector<std::string>& args);

}  // namespace gradshare::supervise
