// startup_repair.cpp: repair_startup and the spawned side (see startup_repair.h).
#include "comm/mpi/train/startup_repair.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>

#include "comm/mpi/mpi_error.h"
#include "comm/mpi/train/job_failure.h"
#include "comm/mpi/train/repair_policy.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"
#include "core/timer.h"
#include "train/strategy_registry.h"

namespace gradshare::cli {

namespace {

// What the master hands processes spawned into a start-up repair (a repair during training
// hands them a train::JoinInfo, which never starts with these bytes).
constexpr char kStartupJoin[] = "gradshare start-up repair";

std::vector<std::uint8_t> startup_join_info() {
  return {kStartupJoin, kStartupJoin + sizeof kStartupJoin};
}

// The next start-up's communicator: the job's processes by logical rank, then the spares.
RepairedStartup reorder(comm::RepairedJob& repaired) {
  const int universe_rank = repaired.universe.rank();
  const int key = repaired.my_logical >= 0 ? repaired.my_logical : (1 << 20) + universe_rank;
  MPI_Comm world = MPI_COMM_NULL;
  comm::check_mpi(MPI_Comm_split(repaired.universe.get(), 0, key, &world), "MPI_Comm_split");
  RepairedStartup startup;
  startup.world = comm::Communicator(world);
  startup.spares = static_cast<int>(repaired.spares.size());
  startup.record.lost = repaired.lost;
  startup.record.replaced = repaired.replaced;
  startup.record.rounds = repaired.rounds;
  return startup;
}

// Nothing may hang the job. Across nodes Open MPI 5.0.7 was seen to leave a survivor stuck for
// good inside a start-up collective while it forwarded the revoke (PMIx_Get in the TCP BTL, for
// a peer it had never talked to), and the others then waited in the agreement. Past the
// deadline the repair gives up as the start-up did before it repaired anything: MPI_Abort ends
// the job with exit 1 and a line, the master's (the others' a moment later, where it is stuck).
class RepairDeadline {
 public:
  RepairDeadline(double seconds, bool master)
      : thread_([this, seconds, master] {
          std::unique_lock lock(mutex_);
          const auto wait = std::chrono::duration<double>(seconds + (master ? 0.0 : 5.0));
          if (done_cv_.wait_for(lock, wait, [this] { return done_; })) return;
          std::fprintf(stderr,
                       "gradshare: error: a rank was lost during start-up and its repair is "
                       "still stuck after %.0f s; nothing was trained: rerun the job\n",
                       seconds);
          std::fflush(nullptr);
          MPI_Abort(MPI_COMM_WORLD, core::kExitRuntimeFailure);
          std::_Exit(core::kExitRuntimeFailure);
        }) {}
  ~RepairDeadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  // last: it starts once the members it uses exist
};

}  // namespace

bool repairs_in_job(const config::ExperimentConfig& config) {
  return comm::fault_tolerance_active() &&
         train::strategy_named(config.training.strategy).distributed &&
         config.fault_tolerance.on_worker_failure != "abort";
}

RepairedStartup repair_startup(MPI_Comm world, int spares, const std::function<void()>& agree,
                               const config::ExperimentConfig& config) {
  const core::Stopwatch watch;
  int size = 0, rank = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &rank);
  const RepairDeadline deadline(2e-3 * static_cast<double>(config.transport.timeout_ms), rank == 0);
  comm::revoke(world);
  agree();
  std::vector<int> logical(static_cast<std::size_t>(size - spares));
  std::iota(logical.begin(), logical.end(), 0);
  const int mine = rank < size - spares ? rank : -1;
  comm::RepairedJob repaired;
  try {
    repaired = comm::repair_job(world, mine, logical, repair_options(config, startup_join_info()));
  } catch (const comm::MasterLost&) {
    throw MasterLostAtStartup();
  }
  std::vector<int> unfilled;
  for (int lost : repaired.lost)
    if (std::find(repaired.replaced.begin(), repaired.replaced.end(), lost) == repaired.replaced.end())
      unfilled.push_back(lost);
  if (!unfilled.empty() && config.fault_tolerance.on_worker_failure == "replace")
    throw core::JobCannotGoOn(rank_names(unfilled) + " lost during start-up and no spare left " +
                              "to take " + (unfilled.size() == 1 ? "its" : "their") +
                              " place (fault_tolerance.spares " +
                              std::to_string(config.fault_tolerance.spares) +
                              "); nothing was trained: rerun the job");
  auto startup = reorder(repaired);
  startup.record.seconds = watch.seconds();
  startup.became_master = repaired.became_master;
  startup.former_rank = repaired.former_logical;
  // The spares neither waiting now nor in a lost rank's place were lost themselves (a spawned
  // replacement was never a spare).
  startup.spares_lost =
      std::max(0, spares - startup.spares - static_cast<int>(repaired.replaced.size()));
  return startup;
}

bool spawned_into_startup(const comm::RepairedJob& joined) {
  return joined.join_info == startup_join_info();
}

RepairedStartup startup_after_spawn(comm::RepairedJob& joined) { return reorder(joined); }

}  // namespace gradshare::cli
