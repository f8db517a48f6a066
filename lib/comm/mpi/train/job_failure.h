// job_failure.h: how a rank ends the job after an error it cannot recover from, and what it
// says. The rules, from what Open MPI 5.0.7 does (measured):
//   - Without fault tolerance MPI_Abort ends every rank; mpirun exits with the code.
//   - Under `mpirun --with-ft ulfm` a process killed by a signal is reported to the others
//     (so a lost worker can be replaced) but does not count in mpirun's exit code: a job whose
//     ranks all die by signal exits 0. MPI_Abort still ends every rank with its code.
// So a worker of a run that replaces lost workers (every strategy with workers under ULFM,
// unless fault_tolerance.on_worker_failure is abort, which checkpoints and exits 75 by itself)
// leaves by SIGKILL, letting the master replace it; every other rank — the master always, a
// Downpour parameter server — ends the job with MPI_Abort and a non-zero code.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "runtime/run_context.h"

namespace gradshare::cli {

// "rank 3" or "ranks 1, 2": lost ranks in a line.
std::string rank_names(const std::vector<int>& ranks);

// Reports `error`, which ended the run on this rank, in one line, and ends the job (see
// above); returns the exit code only in a one-rank run. A process lost before training began
// goes to end_job_lost_at_startup; one lost where nothing repairs it (no ULFM) gives
// "<strategy> lost rank N and repairs in-job only under `mpirun --with-ft ulfm`; rerun the same
// command to resume from <checkpoint>", exit 1.
int end_run_after(const std::exception& error, const runtime::RunContext& context);

// A start-up collective failed with `rc` (under ULFM: a rank was lost before training began).
// One line names the lost ranks and context.phase, and the job ends with exit 1. Under ULFM the
// survivors agree on the lost ranks (comm::agree_on_lost) and the first survivor speaks;
// otherwise the lowest rank that knows speaks first.
[[noreturn]] void end_job_lost_at_startup(const runtime::RunContext& context, int rc);

// Ends the job with exit 1 and `line`, said by the master (every rank knows the same `line`
// and the master is alive): the others leave at once.
[[noreturn]] void end_job_said_by_master(const runtime::RunContext& context,
                                         const std::string& line);

// Ends the job with exit 1 and `line`, said once: the live ranks take turns by rank, and the
// first one's MPI_Abort ends the others before theirs.
[[noreturn]] void end_job_in_turns(const runtime::RunContext& context, const std::string& line);

// Ends the whole job with `code`, or only this process for a worker whose loss the master
// repairs (see above).
[[noreturn]] void end_job(int code, bool replaceable_worker);

}  // namespace gradshare::cli
