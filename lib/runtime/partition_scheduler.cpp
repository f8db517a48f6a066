#include "runtime/partition_scheduler.h"

#include <algorithm>

#include "core/errors.h"

namespace gradshare::runtime {

PartitionScheduler::PartitionScheduler(std::int64_t epochs, std::int64_t partitions_per_epoch,
                                       const DataPosition& start,
                                       std::vector<std::int64_t> partition_sizes,
                                       std::int64_t reserve_ahead)
    : epochs_(epochs), per_epoch_(partitions_per_epoch), first_epoch_(start.first_epoch),
      next_epoch_(start.first_epoch), next_to_report_(start.first_epoch),
      reserve_ahead_(reserve_ahead), sizes_(std::move(partition_sizes)) {
  GS_CHECK(partitions_per_epoch > 0, "an epoch needs at least one partition");
  GS_CHECK(sizes_.empty() || static_cast<std::int64_t>(sizes_.size()) == per_epoch_,
           "one size per partition");
  for (const auto index : start.partitions_done) {
    const std::int64_t epoch = first_epoch_ + index / per_epoch_;
    if (index < 0 || epoch >= epochs_) continue;
    if (!done_.insert({epoch, index % per_epoch_}).second) continue;
    ++done_per_epoch_[epoch];
    minibatches_per_epoch_[epoch] += size_of(index % per_epoch_);
  }
  // A start may hold whole epochs after its first (a new master's, rebuilt from the workers'
  // reports): they count as complete, and those next in order are reported.
  for (const auto& [epoch, done] : done_per_epoch_)
    if (done == per_epoch_) ++completed_epochs_;
  while (next_to_report_ < epochs_ && partitions_done_in(next_to_report_) == per_epoch_)
    newly_completed_.push_back(next_to_report_++);
  skip_done();
}

std::int64_t PartitionScheduler::size_of(std::int64_t partition) const {
  return sizes_.empty() ? 0 : sizes_[static_cast<std::size_t>(partition)];
}

void PartitionScheduler::skip_done() {
  while (next_epoch_ < epochs_ && (done_.count({next_epoch_, next_partition_}) ||
                                   adopted_.count({next_epoch_, next_partition_}))) {
    if (++next_partition_ == per_epoch_) {
      next_partition_ = 0;
      ++next_epoch_;
    }
  }
}

std::vector<PartitionGrant> PartitionScheduler::done_partitions() const {
  std::vector<PartitionGrant> done;
  done.reserve(done_.size());
  for (const auto& [epoch, partition] : done_) done.push_back({epoch, partition});
  return done;
}

DataPosition PartitionScheduler::position_without(const std::vector<PartitionGrant>& excluded) const {
  auto done = done_;
  for (const auto& grant : excluded) done.erase({grant.epoch, grant.partition});
  const auto done_in = [&](std::int64_t epoch) {
    return std::count_if(done.begin(), done.end(), [&](const auto& p) { return p.first == epoch; });
  };
  DataPosition position;
  position.first_epoch = first_epoch_;
  while (position.first_epoch < epochs_ && done_in(position.first_epoch) == per_epoch_)
    ++position.first_epoch;
  for (const auto& [epoch, partition] : done)
    if (epoch >= position.first_epoch)
      position.partitions_done.push_back((epoch - position.first_epoch) * per_epoch_ + partition);
  return position;
}

std::optional<PartitionGrant> PartitionScheduler::take_from_queue() {
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
    skip_done();
  } else {
    return std::nullopt;
  }
  return grant;
}

std::optional<PartitionGrant> PartitionScheduler::next(int worker) {
  GS_CHECK(!in_flight_.count(worker), "worker " + std::to_string(worker) + " asked twice");
  auto& mine = reserved_[worker];
  std::optional<PartitionGrant> grant;
  if (!mine.empty()) {
    grant = mine.front();
    mine.pop_front();
  } else {
    grant = take_from_queue();
  }
  if (grant) {
    in_flight_[worker] = *grant;
    while (static_cast<std::int64_t>(mine.size()) < reserve_ahead_)
      if (auto ahead = take_from_queue()) mine.push_back(*ahead);
      else break;
  }
  if (mine.empty()) reserved_.erase(worker);
  return grant;
}

std::vector<PartitionGrant> PartitionScheduler::reserved(int worker) const {
  const auto it = reserved_.find(worker);
  if (it == reserved_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void PartitionScheduler::complete(int worker) {
  auto it = in_flight_.find(worker);
  GS_CHECK(it != in_flight_.end(), "worker " + std::to_string(worker) + " completed nothing");
  const std::int64_t epoch = it->second.epoch;
  const bool first_time = done_.insert({epoch, it->second.partition}).second;
  minibatches_per_epoch_[epoch] += size_of(it->second.partition);
  in_flight_.erase(it);
  if (first_time && ++done_per_epoch_[epoch] == per_epoch_) {
    ++completed_epochs_;
    // An epoch finished before an older one (a slow worker still holds one of its partitions)
    // waits for it: epochs end in order.
    while (next_to_report_ < epochs_ && done_per_epoch_[next_to_report_] == per_epoch_)
      newly_completed_.push_back(next_to_report_++);
  }
}

void PartitionScheduler::requeue_worker(int worker) {
  // Held first, then the reservations in their order, ahead of everything else.
  if (auto mine = reserved_.find(worker); mine != reserved_.end()) {
    for (auto grant = mine->second.rbegin(); grant != mine->second.rend(); ++grant)
      requeued_.push_front(*grant);
    reserved_.erase(mine);
  }
  auto it = in_flight_.find(worker);
  if (it == in_flight_.end()) return;
  requeued_.push_front(it->second);
  in_flight_.erase(it);
}

bool PartitionScheduler::reopen(const PartitionGrant& grant) {
  if (partitions_done_in(grant.epoch) == per_epoch_) return false;
  if (done_.erase({grant.epoch, grant.partition}) == 0) return false;
  --done_per_epoch_[grant.epoch];
  requeued_.push_front(grant);
  return true;
}

void PartitionScheduler::adopt_in_flight(int worker, const PartitionGrant& grant) {
  GS_CHECK(!in_flight_.count(worker), "worker " + std::to_string(worker) + " holds two partitions");
  GS_CHECK(grant.epoch >= first_epoch_ && grant.epoch < epochs_ && grant.partition >= 0 &&
               grant.partition < per_epoch_,
           "worker " + std::to_string(worker) + " holds a partition outside the schedule");
  in_flight_[worker] = grant;
  adopted_.insert({grant.epoch, grant.partition});
  skip_done();
}

std::optional<PartitionGrant> PartitionScheduler::in_flight(int worker) const {
  const auto it = in_flight_.find(worker);
  if (it == in_flight_.end()) return std::nullopt;
  return it->second;
}

bool PartitionScheduler::all_granted() const {
  return requeued_.empty() && next_epoch_ >= epochs_;
}

std::vector<std::int64_t> PartitionScheduler::take_completed_epochs() {
  std::vector<std::int64_t> epochs;
  epochs.swap(newly_completed_);
  return epochs;
}

std::int64_t PartitionScheduler::minibatches_in(std::int64_t epoch) const {
  auto it = minibatches_per_epoch_.find(epoch);
  return it == minibatches_per_epoch_.end() ? 0 : it->second;
}

std::int64_t PartitionScheduler::partitions_done_in(std::int64_t epoch) const {
  auto it = done_per_epoch_.find(epoch);
  return it == done_per_epoch_.end() ? 0 : it->second;
}

}  // namespace gradshare::runtime
