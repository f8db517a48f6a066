// partition_scheduler.h: the master's dynamic schedule of data partitions.
// Every epoch's shuffled training set is cut into partitions (data::EpochPlan); workers ask for
// one partition at a time, so a fast worker simply takes more. An epoch is complete when every
// one of its partitions has been reported done; epochs are handed out in order, and a worker
// may start on epoch e+1 while others finish e (asynchronous training has no epoch barrier).
// A partition granted to a worker that dies goes back to the queue (requeue_worker).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace gradshare::train {

struct PartitionGrant {
  std::int64_t epoch = 0;      // 0-based
  std::int64_t partition = 0;  // index within the epoch's plan
};

class PartitionScheduler {
 public:
  PartitionScheduler(std::int64_t epochs, std::int64_t partitions_per_epoch,
                     std::int64_t first_epoch = 0);

  // The next partition for `worker`, or nothing when every partition has been handed out.
  std::optional<PartitionGrant> next(int worker);
  // `worker` finished the partition it was granted last.
  void complete(int worker);
  // `worker` is gone: its unfinished partition is handed out again.
  void requeue_worker(int worker);

  bool all_granted() const;
  bool all_done() const { return completed_epochs_ == epochs_ - first_epoch_; }
  // Epochs whose partitions are all done, oldest first, each returned once.
  std::vector<std::int64_t> take_completed_epochs();
  std::int64_t partitions_done_in(std::int64_t epoch) const;
  std::int64_t partitions_per_epoch() const { return per_epoch_; }

 private:
  std::int64_t epochs_;
  std::int64_t per_epoch_;
  std::int64_t first_epoch_;
  std::int64_t next_epoch_;
  std::int64_t next_partition_ = 0;
  std::deque<PartitionGrant> requeued_;
  std::map<int, PartitionGrant> in_flight_;
  std::map<std::int64_t, std::int64_t> done_per_epoch_;
  std::int64_t completed_epochs_ = 0;
  std::vector<std::int64_t> newly_completed_;
};

}  // namespace gradshare::train
