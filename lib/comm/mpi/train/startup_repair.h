// startup_repair.h: a rank lost before training began, replaced inside the job.
//
// Under `mpirun --with-ft ulfm`, with a strategy that repairs lost workers in-job
// (fault_tolerance.on_worker_failure replace or shrink), a process lost during start-up (the
// config checks, the data, the run directory, the host names, the strategy's set-up) costs the
// job its start-up and nothing else. Every survivor, spares included, leaves the start-up where
// it noticed the loss (a start-up collective failed, or the agreement below said so) and:
//   1. revokes the start-up communicator, so that the others' pending calls on it fail too;
//   2. answers the one agreement every start-up ends with (comm::Job::all_started: false here;
//      a rank that reached training answered true and learns of the loss from it);
//   3. takes part in the repair (comm::repair_job: the master decides, a spare takes each lost
//      rank, or without spares MPI_Comm_spawn starts one; under shrink nobody does);
//   4. runs the start-up again on a communicator ordered as a fresh job's: the master and the
//      workers by rank, then the spares still waiting.
// The master keeps its run directory and every rank the data it loaded; the master logs the
// repair and writes a "recovery" record once the run directory is open. Injected start-up
// faults fire in the first start-up only. A lost master is replaced as in training where the
// strategy allows it (train/master_takeover.h: a spare, else the lowest worker, becomes rank
// 0 and takes the run directory over); elsewhere the job ends and says so. Nothing repairs,
// under replace, a lost rank with no spare left to take it; a repair still
// stuck after twice transport.timeout_ms ends the job with exit 1 and a line.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/mpi/repair.h"
#include "config/experiment_config.h"
#include "core/errors.h"
#include "ft/recovery_report.h"

namespace gradshare::cli {

// Whether this run repairs a rank lost before training (the same rule as a rank lost later:
// under ULFM, a distributed strategy, on_worker_failure not abort).
bool repairs_in_job(const config::ExperimentConfig& config);

struct RepairedStartup {
  comm::Communicator world;   // the next start-up's communicator
  int spares = 0;             // how many of its last ranks are spares
  int spares_lost = 0;        // spares that died themselves
  ft::RecoveryRecord record;  // lost and replaced ranks, rounds, seconds
  // The master was lost and this process is the new one (a strategy that replaces its master,
  // train/master_takeover.h); it held `former_rank` before (-1: a spare).
  bool became_master = false;
  int former_rank = -1;
};

// The master was lost during start-up and no process could take its place: nothing repairs
// the job.
class MasterLostAtStartup : public core::JobCannotGoOn {
 public:
  MasterLostAtStartup()
      : core::JobCannotGoOn("the master (rank 0) was lost during start-up; nothing was trained: "
                            "rerun the job") {}
};

// Steps 1-4 above on one survivor: `world` is the failed start-up's communicator, of which the
// last `spares` ranks wait as spares; `agree` answers step 2 (Job::all_started). Throws
// MasterLostAtStartup, or under replace core::JobCannotGoOn when no spare is left for a lost
// rank (every survivor alike).
RepairedStartup repair_startup(MPI_Comm world, int spares, const std::function<void()>& agree,
                               const config::ExperimentConfig& config);

// In a process MPI_Comm_spawn started: whether it replaces a rank lost during start-up (it
// then runs the start-up with the others on startup_after_spawn's communicator).
bool spawned_into_startup(const comm::RepairedJob& joined);
RepairedStartup startup_after_spawn(comm::RepairedJob& joined);

}  // namespace gradshare::cli
