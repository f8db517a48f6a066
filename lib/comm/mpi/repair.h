// repair.h: rebuilding a job's communicators after processes failed (ULFM).
//
// A fault-tolerant job has two communicators: the *universe* (every process, including the
// spare processes started for fault_tolerance.spares, which wait and do not train) and the
// *job* (the master and the workers, ordered by logical rank: a process's place in the job,
// 0 = master; a replacement takes the logical rank of the process it replaces).
// After a failure every survivor — and every spare, which notices it on the universe — calls
// repair_job(), which repeats a round until one succeeds:
//   revoke the universe, shrink it to the survivors (S), and let the master decide: which
//   logical ranks were lost, and which spares take them (replace; with no spare left, or in
//   shrink mode, the lost ranks stay empty); split S into the new job communicator keyed by
//   logical rank; MPIX_Comm_agree over S on the outcome.
//   With the master among the lost, a job whose strategy can replace its master
//   (RepairOptions::master_failover) lets its lowest surviving worker (logical rank
//   RepairOptions::first_worker or above) decide instead who takes logical rank 0, by node
//   (comm/new_master.h: not beside a Downpour server): a spare (replace mode), or a worker,
//   whose own logical rank then counts as lost (and is replaced like any other: by a spare, a
//   spawned process, or left empty under shrink). Every job process passes the job's logical
//   ranks and its host, so any worker can decide.
//   A failure inside a round revokes S, the agreement then fails everywhere, and the next round
//   starts from S: a failure during recovery is repaired too.
// A job started without spares replaces by MPI_Comm_spawn instead (after a successful round;
// newcomers call join_spawned_job()). Spares fit a fixed batch allocation better: they are
// there from the start, and spawning needs free slots in the allocation.
// Nothing may hang the job: a repair that outlives its deadline ends the process after saying
// where it was stuck (a watchdog thread; it dies by SIGKILL, which ULFM reports to the others).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/mpi/communicator.h"
#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::comm {

// The master (logical rank 0) is among the failed and the strategy cannot replace it, or no
// worker survived it: nothing can repair the job. Every survivor
// ends it with a non-zero exit (under ULFM a process that dies by a signal does not fail the
// job, so a survivor that killed itself as a replaceable worker would leave mpirun with 0).
class MasterLost : public core::JobCannotGoOn {
 public:
  MasterLost()
      : core::JobCannotGoOn("the master (rank 0) failed: the job cannot be repaired; run the "
                           "same command again to resume from the newest checkpoint") {}
};

enum class RepairMode { kReplace, kShrink };

struct RepairOptions {
  RepairMode mode = RepairMode::kReplace;
  bool spawn = false;  // replace by MPI_Comm_spawn (a job without spares)
  // What newcomers get from the master (read on the master only), e.g. the run directory.
  std::vector<std::uint8_t> join_info;
  double deadline_seconds = 120;  // the watchdog's limit for the whole repair
  // A lost master is replaced (see above) instead of ending the job with MasterLost.
  bool master_failover = false;
  // The lowest logical rank that may decide after the master's loss and, without a spare, take
  // its place: the first worker (a Downpour job's ranks 1..K-1 serve shards and stay servers).
  int first_worker = 1;
};

struct RepairedJob {
  Communicator universe;        // every live process, spares included
  Communicator job;             // the job's processes in logical order (null on a spare)
  std::vector<int> logical;     // logical rank of each rank of `job`
  int my_logical = -1;          // -1: still a spare
  std::vector<int> spares;      // universe ranks of the spares still waiting
  std::vector<int> lost;        // logical ranks whose processes died (every round)
  std::vector<int> replaced;    // logical ranks taken by spares or spawned processes
  std::vector<std::uint8_t> join_info;  // the decider's, as every process got it
  int rounds = 0;
  // The master was lost and this process took logical rank 0; it held `former_logical`
  // before (-1: a spare).
  bool became_master = false;
  int former_logical = -1;
  core::Clock::time_point began{};  // when this process entered the repair
};

// Collective over the live processes of `universe`. my_logical: -1 on a spare; job_logical:
// the job's logical ranks before the failure (read by whoever decides: the master, or after
// its loss the lowest surviving worker). Without the master, and without master_failover, the
// job cannot be repaired (MasterLost; rerun to resume from the newest checkpoint).
RepairedJob repair_job(MPI_Comm universe, int my_logical, const std::vector<int>& job_logical,
                       const RepairOptions& options);

// Whether MPI_Comm_spawn started this process (to replace a failed one during a repair).
bool started_by_spawn();
// In a process started by MPI_Comm_spawn during a repair: joins it.
RepairedJob join_spawned_job(const RepairOptions& options);

enum class SpareCall { kRepair, kReleased };
// A spare between repairs: returns kRepair when a process of `universe` failed (join the repair
// with my_logical -1) and kReleased when the master ends the run.
SpareCall wait_as_spare(MPI_Comm universe);
// The master, at the end of a run: every spare still waiting may exit.
void release_spares(MPI_Comm universe, const std::vector<int>& spares);

}  // namespace gradshare::comm
