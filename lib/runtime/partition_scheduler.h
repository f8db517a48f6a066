// partition_scheduler.h: the master's dynamic schedule of data partitions.
// Every epoch's shuffled training set is cut into partitions (data::EpochPlan); workers ask for
// one partition at a time, so a fast worker simply takes more. An epoch is complete when every
// one of its partitions has been reported done; epochs are handed out in order, and a worker
// may start on epoch e+1 while others finish e (asynchronous training has no epoch barrier).
// A partition granted to a worker that dies goes back to the queue (requeue_worker); one it
// had finished whose updates never reached anyone is reopened (reopen) and trained again.
// Trained minibatches are counted per epoch (what the epoch records of metrics.jsonl report):
// a partition counts its minibatches each time it is finished, so a partition trained again
// counts twice; partitions done before a resume count once, from the checkpoint.
// Read-ahead (data.prefetch_partitions = k): with each grant a worker gets up to k partitions
// reserved for its next requests, so that it can read them in the background while it trains;
// its next request takes its oldest reservation. A reservation is not a grant: nothing of it is
// trained, and when the worker dies or the job recovers it goes back to the queue.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace gradshare::runtime {

// Which partitions are done: `first_epoch` is the oldest epoch not complete; `partitions_done`
// holds (epoch - first_epoch) * partitions_per_epoch + partition for every done partition of
// that epoch and later ones. This is what a checkpoint stores to resume mid-epoch.
struct DataPosition {
  std::int64_t first_epoch = 0;
  std::vector<std::int64_t> partitions_done;
};

struct PartitionGrant {
  std::int64_t epoch = 0;      // 0-based
  std::int64_t partition = 0;  // index within the epoch's plan
};

// What a worker's request gets: the partition to train (nothing when every partition has been
// handed out) and those reserved for its next requests, to read ahead.
struct PartitionAssignment {
  std::optional<PartitionGrant> grant;
  std::vector<PartitionGrant> read_ahead;
};

class PartitionScheduler {
 public:
  // Starts at `start`: its done partitions are never handed out again. `partition_sizes`: the
  // minibatches of each partition (EpochPlan::partition_sizes), for the counts; empty: none.
  PartitionScheduler(std::int64_t epochs, std::int64_t partitions_per_epoch,
                     const DataPosition& start = {},
                     std::vector<std::int64_t> partition_sizes = {}, std::int64_t reserve_ahead = 0);

  // The next partition for `worker` (its oldest reservation first), or nothing when every
  // partition has been handed out; then tops its reservations up to reserve_ahead.
  std::optional<PartitionGrant> next(int worker);
  // The partitions reserved for `worker`'s next requests, oldest first (none once next() has
  // nothing left to grant).
  std::vector<PartitionGrant> reserved(int worker) const;
  // next(worker) with the reservations it leaves: what a grant message carries.
  PartitionAssignment assign(int worker) {
    auto grant = next(worker);
    return {grant, reserved(worker)};
  }
  // `worker` finished the partition it was granted last.
  void complete(int worker);
  // `worker` is gone (or never got its grant): its unfinished partition and its reservations
  // are handed out again, first.
  void requeue_worker(int worker);
  // A done partition whose training was lost is handed out again (first); false, and nothing
  // changes, when its epoch is complete already (reported, so too late to train it in it).
  bool reopen(const PartitionGrant& grant);
  // A new master's schedule (master_takeover.h), rebuilt from what the workers report: `worker`
  // holds `grant` already, which is therefore never handed out again.
  void adopt_in_flight(int worker, const PartitionGrant& grant);
  // The partition `worker` holds, if any.
  std::optional<PartitionGrant> in_flight(int worker) const;

  bool all_granted() const;
  bool all_done() const { return completed_epochs_ == epochs_ - first_epoch_; }
  // Epochs whose partitions are all done, oldest first, each returned once.
  std::vector<std::int64_t> take_completed_epochs();
  std::int64_t partitions_done_in(std::int64_t epoch) const;
  // Minibatches trained in `epoch` so far (see above).
  std::int64_t minibatches_in(std::int64_t epoch) const;
  std::int64_t partitions_per_epoch() const { return per_epoch_; }
  // Every partition done since this schedule began, epochs complete included (what a
  // replacement learns, for a new master: sharing/takeover.h).
  std::vector<PartitionGrant> done_partitions() const;
  // The position to checkpoint: partitions granted but not done count as not done.
  DataPosition position() const { return position_without({}); }
  // The same with `excluded` (done partitions) counted as not done: a checkpoint taken at a
  // cut that precedes them (sharing/checkpoint_cut.h).
  DataPosition position_without(const std::vector<PartitionGrant>& excluded) const;

 private:
  // Moves the cursor past partitions done before a resume or adopted in flight.
  void skip_done();
  std::optional<PartitionGrant> take_from_queue();
  std::int64_t size_of(std::int64_t partition) const;
  std::int64_t epochs_;
  std::int64_t per_epoch_;
  std::int64_t first_epoch_;
  std::int64_t next_epoch_;
  std::int64_t next_to_report_;  // the oldest epoch take_completed_epochs has not returned
  std::int64_t next_partition_ = 0;
  std::set<std::pair<std::int64_t, std::int64_t>> done_;
  std::set<std::pair<std::int64_t, std::int64_t>> adopted_;  // held before this schedule began
  std::deque<PartitionGrant> requeued_;
  std::map<int, PartitionGrant> in_flight_;
  std::int64_t reserve_ahead_;
  std::map<int, std::deque<PartitionGrant>> reserved_;
  std::map<std::int64_t, std::int64_t> done_per_epoch_;
  std::vector<std::int64_t> sizes_;
  std::map<std::int64_t, std::int64_t> minibatches_per_epoch_;
  std::int64_t completed_epochs_ = 0;
  std::vector<std::int64_t> newly_completed_;
};

}  // namespace gradshare::runtime
