// flood_node.h: one rank of the flood test, on any DataPlane (in-process threads or MPI ranks).
// Every rank originates `messages_per_rank` messages of random sizes and relays what it receives
// to its other links (through comm::Relay). Each message carries its origin, sequence number,
// length and bytes derived from (seed, origin, seq), so a receiver checks that every message
// arrives exactly once, intact and, per origin, in order (FIFO rings + FIFO relays on a tree).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/data_plane.h"
#include "comm/relay.h"

namespace gradshare::comm::testing {

struct FloodOptions {
  int ranks = 0;
  int messages_per_rank = 0;
  std::size_t min_message_bytes = 16;  // at least the 16-byte header
  std::size_t max_message_bytes = 1024;
  std::uint64_t seed = 1;
  std::size_t relay_queue_bytes = 1 << 16;  // Relay saturation level per link
  // Ranks taking part (empty: all); a rank removed from a repaired tree neither sends nor
  // expects anything.
  std::vector<bool> participating;
  bool participates(int rank) const {
    return participating.empty() || participating[static_cast<std::size_t>(rank)];
  }
};

// The message `origin` sends as number `seq`.
std::vector<std::uint8_t> flood_message(const FloodOptions& options, int origin, int seq);

class FloodNode {
 public:
  FloodNode(DataPlane& plane, int rank, const FloodOptions& options);

  // Originates the next message (unless the relay is saturated), polls (checks and relays what
  // arrives) and retries queued relays. Returns whether anything happened.
  bool step();
  // All own messages originated, every other rank's received, nothing left queued.
  bool complete() const;
  // One more poll after everybody completed: anything arriving now is a duplicate.
  void final_poll() { step(); }

  std::size_t received() const { return received_; }
  std::size_t expected() const;
  const std::vector<std::string>& errors() const { return errors_; }
  std::size_t error_count() const { return error_count_; }
  RelayStats relay_stats() const { return relay_.stats(); }

 private:
  int to_originate() const;
  void on_message(int from, std::span<const std::uint8_t> message);
  void error(std::string text);

  DataPlane& plane_;
  int rank_;
  FloodOptions options_;
  Relay relay_;
  int originated_ = 0;
  std::vector<int> next_seq_;  // per origin: the sequence number expected next
  std::size_t received_ = 0;
  std::vector<std::string> errors_;  // the first few, for the report
  std::size_t error_count_ = 0;
};

// Runs every node on a thread of its own until all are complete, then polls each once more
// (anything arriving then is a duplicate). `nodes` are the ranks in order; each plane is driven
// only by its node's thread.
void run_flood_threads(const std::vector<std::unique_ptr<FloodNode>>& nodes);

}  // namespace gradshare::comm::testing
