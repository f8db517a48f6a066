#include "train/partition_scheduler.h"

#include "core/errors.h"

namespace gradshare::train {

PartitionScheduler::PartitionScheduler(std::int64_t epochs, std::int64_t partitions_per_epoch,
                                       std::int64_t first_epoch)
    : epochs_(epochs), per_epoch_(partitions_per_epoch), first_epoch_(first_epoch),
      next_epoch_(first_epoch) {
  GS_CHECK(partitions_per_epoch > 0, "an epoch needs at least one partition");
}

std::optional<PartitionGrant> PartitionScheduler::next(int worker) {
  GS_CHECK(!in_flight_.count(worker), "worker " + std::to_string(worker) + " asked twice");
  PartitionGrant grant;
  if (!requeued_.empty()) {
    grant = requeued_.front();
    requeued_.pop_front();
  } else if (next_epoch_ < epochs_) {
    grant = {next_epoch_, next_partition_};
    if (++next_partition_ == per_epoch_) {
      next_partition_ = 0;
      ++next_epoch_;
    }
  } else {
    return std::nullopt;
  }
  in_flight_[worker] = grant;
  return grant;
}

void PartitionScheduler::complete(int worker) {
  auto it = in_flight_.find(worker);
  GS_CHECK(it != in_flight_.end(), "worker " + std::to_string(worker) + " completed nothing");
  const std::int64_t epoch = it->second.epoch;
  in_flight_.erase(it);
  if (++done_per_epoch_[epoch] == per_epoch_) {
    ++completed_epochs_;
    newly_completed_.push_back(epoch);
  }
}

void PartitionScheduler::requeue_worker(int worker) {
  auto it = in_flight_.find(worker);
  if (it == in_flight_.end()) return;
  requeued_.push_front(it->second);
  in_flight_.erase(it);
}

bool PartitionScheduler::all_granted() const {
  return requeued_.empty() && next_epoch_ >= epochs_;
}

std::vector<std::int64_t> PartitionScheduler::take_completed_epochs() {
  std::vector<std::int64_t> epochs;
  epochs.swap(newly_completed_);
  return epochs;
}

std::int64_t PartitionScheduler::partitions_done_in(std::int64_t epoch) const {
  auto it = done_per_epoch_.find(epoch);
  return it == done_per_epoch_.end() ? 0 : it->second;
}

}  // namespace gradshare::train
