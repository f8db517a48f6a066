// repair.cpp: repair_job, join_spawned_job, the spares' wait (see repair.h).
#include "comm/mpi/repair.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>

#include "comm/mpi/host_names.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/ulfm.h"
#include "comm/new_master.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/timer.h"

namespace gradshare::comm {

namespace {

// This executable and its arguments, read from /proc so a replacement starts exactly like the
// process it replaces.
std::pair<std::string, std::vector<std::string>> own_command_line() {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  GS_CHECK(length > 0, "cannot read /proc/self/exe to spawn a replacement");
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> arguments;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') {
      arguments.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  if (!arguments.empty()) arguments.erase(arguments.begin());  // argv[0]
  return {std::string(exe, static_cast<std::size_t>(length)), arguments};
}

std::vector<int> allgather_int(MPI_Comm comm, int value) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<int> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, comm), "MPI_Allgather");
  return all;
}

constexpr int kReleaseTag = 9001;  // master -> spares on the universe: the run is over

// Keeps a repair from hanging. A round step that takes longer than `step_seconds` (an MPI call
// that does not return, e.g. waiting for a process that stopped without ULFM noticing) gets its
// round's communicator revoked from this thread, which makes the call fail and the round start
// again; a repair still unfinished after `seconds` ends the process: a worker by SIGKILL (the
// one way of leaving that ULFM reports to the others, so the master can repair it away), the
// master by exiting with code 1 (nothing can repair the job without it). Under
// `mpirun --with-ft ulfm` a rank ending by a signal does not count in mpirun's exit code, so
// every rank ending that way left it with 0 (seen across the emulated nodes, where the shrink
// after the death of a node's only process sometimes never returns); MPI_Abort(1) from the stuck
// master did not always help either (mpirun 0 in one of two such runs), while an exit status
// always counts. The other ranks' watchdogs end them a step later.
// Needs MPI_THREAD_MULTIPLE (asked for under fault tolerance, see train_command).
class RepairWatchdog {
 public:
  RepairWatchdog(double seconds, double step_seconds, bool master)
      : thread_([this, seconds, step_seconds, master] {
          const auto start = core::Clock::now();
          std::unique_lock lock(mutex_);
          while (!done_) {
            done_cv_.wait_for(lock, std::chrono::milliseconds(100));
            if (done_) return;
            const auto now = core::Clock::now();
            if (std::chrono::duration<double>(now - start).count() > seconds) {
              std::fprintf(stderr,
                           "gradshare: error: the repair after a process failure is stuck (%s) "
                           "after %.0f s; ending this process (rerun to resume from the newest "
                           "checkpoint)\n",
                           where_.c_str(), seconds);
              if (master) std::_Exit(1);
              std::raise(SIGKILL);
            }
            if (round_comm_ != MPI_COMM_NULL && !revoked_ &&
                std::chrono::duration<double>(now - step_start_).count() > step_seconds) {
              core::log_warn("repair: no progress for " + std::to_string(static_cast<int>(step_seconds)) +
                             " s (" + where_ + "): revoking the round to start it again");
              revoke(round_comm_);
              revoked_ = true;
            }
          }
        }) {}
  ~RepairWatchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  // A new step of the round on `round_comm` (MPI_COMM_NULL: nothing to revoke).
  void at(const char* where, MPI_Comm round_comm = MPI_COMM_NULL) {
    {
      std::lock_guard lock(mutex_);
      where_ = where;
      step_start_ = core::Clock::now();
      if (round_comm != round_comm_) revoked_ = false;
      round_comm_ = round_comm;
    }
    if (core::Logger::instance().enabled(core::LogLevel::kDebug)) {
      char line[160];  // where a repair's time goes (logging.level: debug)
      std::snprintf(line, sizeof line, "repair: %s (%.3f s into the repair)", where,
                    std::chrono::duration<double>(core::Clock::now() - started_).count());
      core::log_debug(line);
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::string where_ = "starting";
  const core::Clock::time_point started_ = core::Clock::now();
  core::Clock::time_point step_start_ = core::Clock::now();
  MPI_Comm round_comm_ = MPI_COMM_NULL;
  bool revoked_ = false;
  std::thread thread_;
};

// The decider's plan in a round, broadcast to every process of the round's communicator: the
// lost logical ranks, which round ranks (spares, or after the master's loss the deciding
// worker) take which of them, and the join info.
struct Plan {
  std::vector<int> lost;
  std::vector<std::pair<int, int>> assigned;  // (round rank of the taker, logical rank)
  std::vector<std::uint8_t> join_info;

  void broadcast(MPI_Comm comm, int root = 0) {
    int sizes[3] = {static_cast<int>(lost.size()), static_cast<int>(assigned.size()),
                    static_cast<int>(join_info.size())};
    check_mpi(MPI_Bcast(sizes, 3, MPI_INT, root, comm), "MPI_Bcast");
    lost.resize(static_cast<std::size_t>(sizes[0]));
    assigned.resize(static_cast<std::size_t>(sizes[1]));
    join_info.resize(static_cast<std::size_t>(sizes[2]));
    std::vector<int> pairs;
    for (const auto& [rank, logical] : assigned) pairs.insert(pairs.end(), {rank, logical});
    pairs.resize(2 * assigned.size());
    check_mpi(MPI_Bcast(lost.data(), sizes[0], MPI_INT, root, comm), "MPI_Bcast");
    check_mpi(MPI_Bcast(pairs.data(), 2 * sizes[1], MPI_INT, root, comm), "MPI_Bcast");
    check_mpi(MPI_Bcast(join_info.data(), sizes[2], MPI_BYTE, root, comm), "MPI_Bcast");
    for (std::size_t i = 0; i < assigned.size(); ++i) assigned[i] = {pairs[2 * i], pairs[2 * i + 1]};
  }
};

void add_once(std::vector<int>& list, int value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// The repair rounds of one process (see repair.h).
class RepairLoop {
 public:
  RepairLoop(int my_logical, std::vector<int> job_logical, const RepairOptions& options)
      : options_(options), expected_(std::move(job_logical)),
        // The master's watchdog fires one step before the others': its MPI_Abort reaches
        // processes still alive (every rank gone by a signal first left mpirun with 0).
        watchdog_(options.deadline_seconds +
                      (my_logical == 0 ? 0.0 : std::max(5.0, options.deadline_seconds / 8)),
                  std::max(5.0, options.deadline_seconds / 8), my_logical == 0) {
    job_.my_logical = my_logical;
  }

  RepairedJob run(MPI_Comm broken) {
    MPI_Comm current = broken;
    for (;;) {
      ++job_.rounds;
      watchdog_.at("revoking and shrinking the universe");
      revoke(current);
      Communicator survivors = shrink(current);
      bool ok = true;
      try {
        round(survivors.get());
        watchdog_.at("round done");
      } catch (const MpiError& error) {
        if (!error.is_process_failure()) throw;
        core::log_warn("a process failed during recovery (" + std::string(error.what()) + ")");
        revoke(survivors.get());
        ok = false;
      }
      watchdog_.at("agreeing on the outcome");  // agree works on a revoked communicator
      if (agree(survivors.get(), ok)) {
        job_.universe = std::move(survivors);
        job_.became_master = job_.my_logical != 0 && next_logical_ == 0;
        if (job_.became_master) job_.former_logical = job_.my_logical;
        job_.my_logical = next_logical_;
        job_.job = std::move(next_job_);
        if (options_.spawn && job_.my_logical >= 0) spawn_replacements();
        return std::move(job_);
      }
      core::log_warn("the repair round failed: repairing again");
      held_ = std::move(survivors);
      current = held_.get();
    }
  }

  RepairedJob join_spawned(MPI_Comm parent) {
    watchdog_.at("merging with the survivors after MPI_Comm_spawn");
    MPI_Comm merged = MPI_COMM_NULL;
    check_mpi(MPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge");
    Communicator universe(merged);
    Plan plan;
    plan.broadcast(merged);
    int index = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &index);  // the spawned processes' own world
    GS_CHECK(index < static_cast<int>(plan.lost.size()), "a replacement without a rank to take");
    job_.my_logical = plan.lost[static_cast<std::size_t>(index)];
    job_.lost = job_.replaced = plan.lost;
    job_.join_info = plan.join_info;
    finish_spawn(std::move(universe));
    return std::move(job_);
  }

 private:
  // One round on the survivors' communicator: the decider's plan, then the new job
  // communicator. Throws MpiError when a process fails meanwhile.
  void round(MPI_Comm survivors) {
    watchdog_.at("deciding which ranks were lost and who replaces them", survivors);
    const auto logical = allgather_int(survivors, job_.my_logical);
    int me = 0;
    MPI_Comm_rank(survivors, &me);
    const int decider = decider_of(logical);
    // After the master's loss the new one is chosen by node (comm/new_master.h). The decider
    // is the master itself while it lives.
    const bool master_lost = logical[static_cast<std::size_t>(decider)] != 0;
    const auto nodes = master_lost ? allgather_host_keys(survivors) : std::vector<std::uint64_t>{};
    Plan plan;
    if (me == decider) plan = decide(logical, nodes, me);
    plan.broadcast(survivors, decider);
    next_logical_ = job_.my_logical;
    std::vector<int> members;
    for (std::size_t r = 0; r < logical.size(); ++r) {
      int rank = logical[r];
      for (const auto& [taker, taken] : plan.assigned)
        if (taker == static_cast<int>(r)) rank = taken;
      if (static_cast<int>(r) == me) next_logical_ = rank;
      if (rank >= 0) members.push_back(rank);
    }
    std::sort(members.begin(), members.end());
    watchdog_.at("building the repaired job communicator", survivors);
    MPI_Comm job = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(survivors, next_logical_ >= 0 ? 0 : MPI_UNDEFINED, next_logical_, &job),
              "MPI_Comm_split");
    next_job_ = Communicator(job);
    for (int rank : plan.lost) add_once(job_.lost, rank);
    for (const auto& assignment : plan.assigned) add_once(job_.replaced, assignment.second);
    job_.logical = members;
    job_.join_info = plan.join_info;
    job_.spares.clear();
    for (std::size_t r = 0; r < logical.size(); ++r) {
      bool taken = false;
      for (const auto& assignment : plan.assigned) taken |= assignment.first == static_cast<int>(r);
      if (logical[r] < 0 && !taken) job_.spares.push_back(static_cast<int>(r));
    }
    expected_ = members;
  }

  // The round rank that decides: the master's, or after its loss (master_failover) the lowest
  // surviving worker's. MasterLost when there is none.
  int decider_of(const std::vector<int>& logical) const {
    const auto master = std::find(logical.begin(), logical.end(), 0);
    if (master != logical.end()) return static_cast<int>(master - logical.begin());
    if (!options_.master_failover) throw MasterLost();
    int decider = -1;
    for (std::size_t r = 0; r < logical.size(); ++r)
      if (logical[r] >= options_.first_worker &&
          (decider < 0 || logical[r] < logical[static_cast<std::size_t>(decider)]))
        decider = static_cast<int>(r);
    if (decider < 0) throw MasterLost();
    return decider;
  }

  // The decider's plan (see repair.h): the lost logical ranks; a new master first if the old
  // one is lost (by node: `nodes`, each round rank's), then spares for the others (replace mode).
  Plan decide(const std::vector<int>& logical, const std::vector<std::uint64_t>& nodes,
              int me) const {
    Plan plan;
    for (int rank : expected_)
      if (std::find(logical.begin(), logical.end(), rank) == logical.end()) plan.lost.push_back(rank);
    std::vector<int> spares;
    for (std::size_t r = 0; r < logical.size(); ++r)
      if (logical[r] < 0) spares.push_back(static_cast<int>(r));
    const bool replace = options_.mode == RepairMode::kReplace;
    std::size_t next_spare = 0;
    if (logical[static_cast<std::size_t>(me)] != 0) {  // the decider is not the master: lost
      std::vector<Survivor> survivors;
      for (std::size_t r = 0; r < logical.size(); ++r) survivors.push_back({logical[r], nodes[r]});
      const int chosen = choose_new_master(survivors, options_.first_worker, me, replace);
      plan.assigned.emplace_back(chosen, 0);
      if (logical[static_cast<std::size_t>(chosen)] < 0) {
        spares.erase(std::find(spares.begin(), spares.end(), chosen));
      } else {
        plan.lost.push_back(logical[static_cast<std::size_t>(chosen)]);
      }
    }
    std::sort(plan.lost.begin(), plan.lost.end());
    if (replace)
      for (int rank : plan.lost)
        if (rank != 0 && next_spare < spares.size()) plan.assigned.emplace_back(spares[next_spare++], rank);
    plan.join_info = options_.join_info;
    return plan;
  }

  // Without spares: MPI_Comm_spawn a process for every lost rank. Not retried: a failure here
  // ends the job (rerun to resume from the checkpoint).
  void spawn_replacements() {
    std::vector<int> missing;
    if (job_.my_logical == 0)
      for (int rank : job_.lost)
        if (std::find(job_.logical.begin(), job_.logical.end(), rank) == job_.logical.end())
          missing.push_back(rank);
    int count = static_cast<int>(missing.size());
    check_mpi(MPI_Bcast(&count, 1, MPI_INT, 0, job_.job.get()), "MPI_Bcast");
    if (count == 0 || options_.mode != RepairMode::kReplace) return;
    const auto [exe, arguments] = own_command_line();
    std::vector<char*> argv;
    for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    std::vector<int> spawn_errors(static_cast<std::size_t>(count));
    watchdog_.at("MPI_Comm_spawn of the replacements");
    MPI_Comm inter = MPI_COMM_NULL;
    check_mpi(MPI_Comm_spawn(exe.c_str(), argv.data(), count, MPI_INFO_NULL, 0, job_.job.get(),
                             &inter, spawn_errors.data()),
              "MPI_Comm_spawn");
    Communicator inter_comm(inter);
    watchdog_.at("merging with the spawned replacements");
    MPI_Comm merged = MPI_COMM_NULL;
    check_mpi(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
    Communicator universe(merged);
    Plan plan;
    plan.lost = missing;
    plan.join_info = job_.join_info;
    plan.broadcast(merged);
    for (int rank : plan.lost) add_once(job_.replaced, rank);
    finish_spawn(std::move(universe));
  }

  // Survivors and newcomers: the job communicator in logical order, agreed on.
  void finish_spawn(Communicator universe) {
    watchdog_.at("ordering the job with the spawned replacements");
    MPI_Comm job = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(universe.get(), 0, job_.my_logical, &job), "MPI_Comm_split");
    job_.job = Communicator(job);
    job_.logical = allgather_int(job_.job.get(), job_.my_logical);
    job_.spares.clear();
    if (!agree(universe.get(), true))
      throw core::RuntimeError("a process failed while spawned replacements joined the job; "
                               "run the same command again to resume from the newest checkpoint");
    job_.universe = std::move(universe);
  }

  const RepairOptions& options_;
  std::vector<int> expected_;  // the logical ranks the job should have (read by the decider)
  RepairedJob job_;
  int next_logical_ = -1;
  Communicator next_job_;
  Communicator held_;  // the communicator the current round started from
  RepairWatchdog watchdog_;
};

}  // namespace

RepairedJob repair_job(MPI_Comm universe, int my_logical, const std::vector<int>& job_logical,
                       const RepairOptions& options) {
  stop_freeing_communicators();
  const auto began = core::Clock::now();
  RepairLoop loop(my_logical, job_logical, options);
  auto repaired = loop.run(universe);
  repaired.began = began;
  return repaired;
}

bool started_by_spawn() {
  MPI_Comm parent = MPI_COMM_NULL;
  check_mpi(MPI_Comm_get_parent(&parent), "MPI_Comm_get_parent");
  return parent != MPI_COMM_NULL;
}

RepairedJob join_spawned_job(const RepairOptions& options) {
  MPI_Comm parent = MPI_COMM_NULL;
  check_mpi(MPI_Comm_get_parent(&parent), "MPI_Comm_get_parent");
  stop_freeing_communicators();
  RepairLoop loop(-1, {}, options);
  return loop.join_spawned(parent);
}

SpareCall wait_as_spare(MPI_Comm universe) {
  core::Backoff backoff(10000);
  for (;;) {
    int found = 0;
    MPI_Status status;
    try {
      // The release first: a process that fails after the master released the spares leaves
      // nothing to repair.
      check_mpi(MPI_Iprobe(0, kReleaseTag, universe, &found, &status), "MPI_Iprobe");
      if (!found) check_for_failures(universe);
    } catch (const MpiError& error) {
      if (!error.is_process_failure()) throw;
      return SpareCall::kRepair;
    }
    if (found) {
      int nothing = 0;
      check_mpi(MPI_Recv(&nothing, 1, MPI_INT, 0, kReleaseTag, universe, MPI_STATUS_IGNORE), "MPI_Recv");
      return SpareCall::kReleased;
    }
    backoff.wait();
  }
}

void release_spares(MPI_Comm universe, const std::vector<int>& spares) {
  for (int spare : spares) {
    const int nothing = 0;
    try {
      check_mpi(MPI_Send(&nothing, 1, MPI_INT, spare, kReleaseTag, universe), "MPI_Send");
    } catch (const MpiError& error) {
      // At the end of the run a failure is not repaired: a spare that cannot be told ends by
      // its own watchdog, or with the job.
      if (!error.is_process_failure()) throw;
    }
  }
}

}  // namespace gradshare::comm
