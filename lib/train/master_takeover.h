// master_takeover.h: a new master inside the job. Under `mpirun --with-ft ulfm` a strategy whose
// workers hold, or can tell, everything its master knows beyond the run directory
// (every distributed strategy) replaces a lost master without a restart:
//
//   the survivors' repair (comm/mpi/repair.h) gives logical rank 0 to a spare, or with none to
//     the lowest worker (under Downpour by node: comm/new_master.h), whose own rank then counts
//     as lost (replaced like a worker's);
//   the new master takes the run directory over: the log rank-0.log and the terminal,
//     metrics.jsonl (appended, after ending a line the lost master left cut short), run.lock;
//   its strategy's master starts from what the run directory and the workers know: the epochs
//     metrics.jsonl records as evaluated, early stopping's verdict, the wall time so far; the
//     synchronous ones (SynchronousMaster::take_over) send every worker the GroupResume of any
//     repair with no checkpoint mark, so the workers' newest state comes as a fresh checkpoint
//     and they send again what it lacks (group_recovery.h); gradient sharing's rebuilds its
//     model and schedule from what the workers report (sharing/takeover.h); then it loads the
//     evaluation sets, which a worker never read;
//   a `recovery` record names the lost master and who took its place.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "train/job_session.h"
#include "runtime/partition_scheduler.h"
#include "runtime/run_context.h"
#include "runtime/run_lock.h"

namespace gradshare::train {

// Thrown out of a worker's run (run_with_recovery) when a repair made this process the master;
// run_group_strategy catches it and runs the master's role.
class BecameMaster : public std::exception {
 public:
  const char* what() const noexcept override { return "this process became the master"; }
};

// What metrics.jsonl records of the run so far.
struct RunSoFar {
  std::int64_t epochs_evaluated = 0;  // the newest "epoch" record's epoch
  bool stopped_early = false;         // an "early_stop" record
  double wall_seconds = 0;            // the newest "epoch" record's
  std::int64_t steps = 0;             // the newest record's "step" (training steps so far)
};
RunSoFar read_run_so_far(const runtime::RunContext& context);

// A new master's schedule position: the epochs metrics.jsonl records as evaluated are done, and
// after them the partitions done in the newest checkpoint (the run directory's, else the one
// the run resumed from) and those the workers `reported` done.
runtime::DataPosition rebuilt_position(const runtime::RunContext& context, const RunSoFar& so_far,
                                       std::int64_t partitions_per_epoch,
                                       const std::vector<runtime::PartitionGrant>& reported);

// Makes this process the job's master (see above); `repair`: the repair that made it so. The
// lock is held until the returned object goes.
std::unique_ptr<runtime::RunLock> become_master(runtime::RunContext& context,
                                                const RepairOutcome& repair);
// The new master's validation and test sets, unless it holds them (the workers train
// meanwhile).
void load_evaluation_sets(runtime::RunContext& context);

// The recovery record's account of a takeover.
std::string takeover_note(const RepairOutcome& repair);
// Who became the master: "a spare" or "worker rank N" (`former_rank`, -1 for a spare).
std::string new_master_name(int former_rank);

}  // namespace gradshare::train
