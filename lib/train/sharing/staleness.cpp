#include "train/sharing/staleness.h"

#include <algorithm>

namespace gradshare::train {

namespace {
std::size_t bucket_of(std::int64_t staleness) {
  std::size_t bucket = 0;
  for (std::int64_t edge = 1; bucket + 1 < StalenessStats::kBuckets && staleness >= edge; edge *= 2)
    ++bucket;
  return bucket;
}
}  // namespace

void StalenessStats::record(std::int64_t staleness) {
  ++count;
  sum += staleness;
  max = std::max(max, staleness);
  ++histogram[bucket_of(staleness)];
}

void StalenessStats::add(const StalenessStats& other) {
  count += other.count;
  sum += other.sum;
  max = std::max(max, other.max);
  for (std::size_t b = 0; b < kBuckets; ++b) histogram[b] += other.histogram[b];
  wait_seconds += other.wait_seconds;
  waits += other.waits;
}

const char* StalenessStats::bucket_name(std::size_t bucket) {
  static const char* const kNames[kBuckets] = {"0", "1", "2-3", "4-7", "8-15", "16-31", "32-63", "64+"};
  return kNames[bucket];
}

std::string StalenessStats::histogram_text() const {
  std::string text;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    if (histogram[b] == 0) continue;
    if (!text.empty()) text += ' ';
    text += std::string(bucket_name(b)) + ":" + std::to_string(histogram[b]);
  }
  return text.empty() ? "none" : text;
}

StalenessTracker::StalenessTracker(int ranks, int self, std::int64_t bound, bool aggregating)
    : self_(self), bound_(bound), first_peer_(aggregating ? 0 : 1),
      clock_(static_cast<std::size_t>(ranks), 0),
      state_(static_cast<std::size_t>(ranks), PeerState::kUnknown) {}

void StalenessTracker::applied(int origin, std::uint64_t clock, bool idle, std::int64_t now) {
  if (origin == self_ || origin < first_peer_) return;
  const auto o = static_cast<std::size_t>(origin);
  if (o >= clock_.size()) return;
  stats_.record(std::max<std::int64_t>(0, now - static_cast<std::int64_t>(clock)));
  if (state_[o] == PeerState::kGone) return;
  clock_[o] = std::max(clock_[o], clock);
  state_[o] = idle ? PeerState::kIdle : PeerState::kTraining;
}

std::optional<int> StalenessTracker::blocking_peer(std::int64_t now) const {
  if (bound_ <= 0) return std::nullopt;
  for (auto o = static_cast<std::size_t>(first_peer_); o < clock_.size(); ++o) {
    if (static_cast<int>(o) == self_ || state_[o] != PeerState::kTraining) continue;
    if (static_cast<std::int64_t>(clock_[o]) < now - bound_) return static_cast<int>(o);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> StalenessTracker::slowest_training_peer() const {
  std::optional<std::uint64_t> slowest;
  for (auto o = static_cast<std::size_t>(first_peer_); o < clock_.size(); ++o)
    if (static_cast<int>(o) != self_ && state_[o] == PeerState::kTraining)
      slowest = slowest ? std::min(*slowest, clock_[o]) : clock_[o];
  return slowest;
}

void StalenessTracker::restart(std::int64_t bound) {
  bound_ = bound;
  std::fill(state_.begin(), state_.end(), PeerState::kUnknown);
  std::fill(clock_.begin(), clock_.end(), 0);
}

void StalenessTracker::forget_peers(const std::vector<int>& live) {
  std::fill(state_.begin(), state_.end(), PeerState::kGone);
  std::fill(clock_.begin(), clock_.end(), 0);
  for (int rank : live)
    if (rank >= first_peer_ && static_cast<std::size_t>(rank) < state_.size())
      state_[static_cast<std::size_t>(rank)] = PeerState::kUnknown;
}

}  // namespace gradshare::train
