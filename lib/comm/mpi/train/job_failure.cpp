#include "comm/mpi/train/job_failure.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "comm/mpi/mpi_job.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/repair.h"
#include "comm/mpi/ulfm.h"
#include "comm/mpi/train/startup_repair.h"
#include "core/errors.h"
#include "core/log.h"
#include "runtime/checkpointer.h"
#include "train/strategy_registry.h"

namespace gradshare::cli {

std::string rank_names(const std::vector<int>& ranks) {
  std::string names;
  for (int rank : ranks) names += (names.empty() ? "" : ", ") + std::to_string(rank);
  return (ranks.size() == 1 ? "rank " : "ranks ") + names;
}

using runtime::RunContext;

namespace {

// Whether the master can replace this rank (a worker, or a Downpour parameter server, whose
// replacement rebuilds its shard).
bool replaceable(const RunContext& context) {
  return !context.is_master() && repairs_in_job(context.config);
}

// The ranks this process knows to have failed (ULFM), or none when it cannot tell.
std::vector<int> known_failed(const RunContext& context) {
  try {
    return comm::failed_ranks(comm::mpi_comm(*context.job));
  } catch (const std::exception&) {
    return {};
  }
}

std::string lost_at_startup(const std::vector<int>& failed, const RunContext& context) {
  return (failed.empty() ? std::string("a rank was") : rank_names(failed) + (failed.size() == 1 ? " was" : " were")) +
         " lost during start-up (at or before: " + context.phase + "); nothing was trained: rerun the job";
}

// The line for an error that ended the run: a process lost under a strategy that cannot replace
// it says so and names the checkpoint a rerun resumes from.
std::string describe_fatal_error(const std::exception& error, const RunContext& context) {
  const auto* mpi = dynamic_cast<const comm::MpiError*>(&error);
  if (mpi == nullptr || !mpi->is_process_failure() || repairs_in_job(context.config))
    return error.what();
  const auto failed = known_failed(context);
  const std::string resume =
      "rerun the same command to resume from " + runtime::resume_point(context.run_directory);
  const auto& strategy = context.config.training.strategy;
  if (std::find(failed.begin(), failed.end(), 0) != failed.end())
    return strategy + " lost its master (rank 0); " + resume;
  const std::string why = comm::fault_tolerance_active()
                              ? " (fault_tolerance.on_worker_failure is abort)"
                              : " and repairs in-job only under `mpirun --with-ft ulfm`";
  return strategy + " lost " + (failed.empty() ? std::string("a process") : rank_names(failed)) +
         why + "; " + resume;
}

// The ranks below `rank` not known to have failed: 0 for the lowest live rank.
int live_ranks_below(const std::vector<int>& failed, int rank) {
  int live = 0;
  for (int r = 0; r < rank; ++r)
    if (std::find(failed.begin(), failed.end(), r) == failed.end()) ++live;
  return live;
}

[[noreturn]] void print_and_abort(const std::string& line) {
  std::fprintf(stderr, "gradshare: error: %s\n", line.c_str());
  std::fflush(nullptr);
  // MPI_Abort makes mpirun kill every rank: give it a moment to forward the line first.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  MPI_Abort(MPI_COMM_WORLD, core::kExitRuntimeFailure);
  std::_Exit(core::kExitRuntimeFailure);
}

}  // namespace

void end_job_lost_at_startup(const RunContext& context, int rc) {
  const std::string why = " (" + comm::mpi_error_string(rc) + ")";
  if (comm::fault_tolerance_active()) {
    // The survivors agree on who was lost, and the first of them says so. A rank still inside
    // MPI start-up never joins: it says so itself at its start-up deadline
    // (transport.timeout_ms), and after twice that the lowest rank this one knows alive
    // ends the job, with the line only where that is this rank.
    const auto failed = known_failed(context);
    const bool lowest = live_ranks_below(failed, context.rank) == 0;
    std::thread([line = lost_at_startup(failed, context) + why, lowest,
                 seconds = 2e-3 * static_cast<double>(context.config.transport.timeout_ms)] {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      if (lowest) print_and_abort(line);
      MPI_Abort(MPI_COMM_WORLD, core::kExitRuntimeFailure);
    }).detach();
    std::optional<comm::AgreedLoss> loss;
    try {
      loss = comm::agree_on_lost(comm::mpi_comm(*context.job));
    } catch (const std::exception&) {
      // no communicator to agree on: the turns below
    }
    if (loss && loss->survivors.rank() == 0)
      print_and_abort(lost_at_startup(loss->lost, context) + why);
    if (loss) {
      // The others leave without a line. Under ULFM a process that ends is one more failure,
      // not the end of the job: the first survivor still speaks, and its MPI_Abort sets the
      // job's exit code.
      std::fflush(nullptr);
      std::_Exit(core::kExitRuntimeFailure);
    }
  }
  end_job_in_turns(context, lost_at_startup(known_failed(context), context) + why);
}

void end_job_said_by_master(const RunContext& context, const std::string& line) {
  if (context.is_master()) print_and_abort(line);
  // Under ULFM a process that ends is one more failure, not the end of the job: the master
  // still speaks, and its MPI_Abort sets the job's exit code.
  std::fflush(nullptr);
  std::_Exit(core::kExitRuntimeFailure);
}

void end_job_in_turns(const RunContext& context, const std::string& line) {
  // Without an agreement the live ranks take turns, 3 s apart: the first prints the line and
  // aborts the job, which ends the others before their turn. A later one speaks only when every
  // one before it is still stuck (in MPI start-up, say) and would otherwise abort the job
  // without a line.
  const int turn = live_ranks_below(known_failed(context), context.rank);
  std::this_thread::sleep_for(std::chrono::seconds(3 * std::min(turn, 3)));
  print_and_abort(line);
}

int end_run_after(const std::exception& error, const RunContext& context) {
  const auto* mpi = dynamic_cast<const comm::MpiError*>(&error);
  if (mpi != nullptr && mpi->is_process_failure() && context.phase != RunContext::kTraining)
    end_job_lost_at_startup(context, mpi->code());
  const std::string line = describe_fatal_error(error, context);
  core::log_error(line);
  std::fprintf(stderr, "gradshare: error on rank %d: %s\n", context.rank, line.c_str());
  const bool user = dynamic_cast<const core::UserError*>(&error) != nullptr;
  const int code = user ? core::kExitUserError : core::kExitRuntimeFailure;
  // The peers would wait on this rank: end the job. A worker the job can replace dies as a
  // failed process would; without a master nothing replaces it and the job must fail.
  const bool cannot_go_on = dynamic_cast<const core::JobCannotGoOn*>(&error) != nullptr;
  if (context.size > 1) end_job(code, !cannot_go_on && replaceable(context));
  return code;
}

void end_job(int code, bool replaceable_worker) {
  std::fflush(nullptr);
  if (replaceable_worker) std::raise(SIGKILL);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace gradshare::cli
