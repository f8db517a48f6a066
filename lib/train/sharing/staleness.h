// sharing/staleness.h: how far a gradient-sharing worker runs ahead of its peers' updates, measured,
// and bounded as in stale-synchronous parallel training (Ho et al., 2013).
//
// Clocks: a worker's clock counts its training steps; every message carries its origin's clock
// at creation (the header's iteration field). When a worker applies a peer's update at its own
// clock c, the update's staleness is c - iteration (0 when the receiver is the one behind): the
// steps this replica took past the step that produced the update. Workers take steps at about
// the same pace, so this is also about how many steps the origin took between creating the
// update and this replica applying it.
//
// The bound (encoding.max_staleness = b > 0): a worker does not start step s + 1 while a peer
// that trains has no update with clock >= s - b applied here. While it waits it keeps applying
// and relaying, and sends what its own residual holds (so two waiting workers never wait on
// each other's unsent steps). Who counts:
//   - a peer counts from its first message; one never heard from does not block;
//   - a message flagged kFlagIdle says its origin has no partition to train; it stops counting
//     until its next unflagged message;
//   - after a recovery (a dead peer, a replacement) the view restarts: dead ranks are gone for
//     good (the resync may still apply their last updates: those never make them count), and
//     a replacement counts from its first message, whose clock continues the dead rank's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradshare::train {

// Caller flag (codec::MessageMeta::flags bits 16..23): the origin has no partition to train.
inline constexpr std::uint32_t kFlagIdle = 1u << 16;
// Caller flag: an aggregating relay's message that closes a flush round on its link
// (aggregating_relay.h).
inline constexpr std::uint32_t kFlagFinal = 1u << 17;
// Caller flag: an aggregating relay's (empty) marker of a checkpoint's cut on its parent link.
inline constexpr std::uint32_t kFlagMarker = 1u << 18;

// Staleness figures over some window: count, mean, max and a histogram.
struct StalenessStats {
  // Buckets by staleness: 0, 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+.
  static constexpr std::size_t kBuckets = 8;
  std::int64_t count = 0;
  std::int64_t sum = 0;
  std::int64_t max = 0;
  std::array<std::int64_t, kBuckets> histogram{};
  double wait_seconds = 0;  // time spent held by the bound
  std::int64_t waits = 0;   // steps that waited

  void record(std::int64_t staleness);
  void add(const StalenessStats& other);
  double mean() const { return count > 0 ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
  // "0:812 1:97 2-3:12 ..." (empty buckets left out).
  std::string histogram_text() const;
  static const char* bucket_name(std::size_t bucket);
};

class StalenessTracker {
 public:
  // ranks: the job's logical ranks (rank 0, the master, never trains); self: this worker.
  // aggregating: messages carry their sending neighbour's view (aggregating_relay.h), the
  // master's included, so origin 0 counts like any peer.
  StalenessTracker(int ranks, int self, std::int64_t bound, bool aggregating = false);

  // A peer's message was applied here at this worker's clock `now`.
  void applied(int origin, std::uint64_t clock, bool idle, std::int64_t now);
  // The peer whose updates lag more than the bound behind clock `now`, if any.
  std::optional<int> blocking_peer(std::int64_t now) const;
  // The newest clock applied from `origin` (0 when none).
  std::uint64_t clock_of(int origin) const { return clock_[static_cast<std::size_t>(origin)]; }
  // The slowest clock among peers that train; nullopt when none does.
  std::optional<std::uint64_t> slowest_training_peer() const;
  // After a recovery: the live workers are unknown again, every other rank is gone.
  void forget_peers(const std::vector<int>& live);

  std::int64_t bound() const { return bound_; }
  // Aggregating, after a repair: every neighbour's link starts again (the master's too), and
  // the bound follows the repaired tree's depth (sharing_staleness_bound).
  void restart(std::int64_t bound);
  StalenessStats& stats() { return stats_; }

 private:
  enum class PeerState : std::uint8_t { kUnknown, kTraining, kIdle, kGone };
  int self_;
  std::int64_t bound_;
  int first_peer_;  // 1, or 0 when aggregating
  std::vector<std::uint64_t> clock_;
  std::vector<PeerState> state_;
  StalenessStats stats_;
};

}  // namespace gradshare::train
