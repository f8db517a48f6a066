// update_exchange.h: one replica's side of gradient sharing, independent of who trains.
//   - applies every encoded update exactly once: an update ID is (origin, seq); a version
//     vector (highest contiguous seq applied per origin) plus the few seqs applied above it
//     decides; duplicates are counted, never applied;
//   - relays each message to every link except the one it came from (star and tree alike);
//   - sends through a comm::Relay, whose per-link FIFO queues make back-pressure on one link
//     neither drop nor reorder anything;
//   - rejects malformed messages (bad bytes from the network) without crashing, and counts them.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "comm/data_plane.h"
#include "comm/relay.h"

namespace gradshare::train {

struct ExchangeStats {
  std::uint64_t applied = 0;     // messages applied to the parameters (own ones included)
  std::uint64_t duplicates = 0;  // messages seen again and not applied
  std::uint64_t rejected = 0;    // malformed messages dropped
  std::uint64_t relayed = 0;     // message copies forwarded to other links
  std::uint64_t published = 0;   // own messages sent
  std::uint64_t bytes_published = 0;
};

class UpdateExchange {
 public:
  UpdateExchange(comm::DataPlane& plane, int self_rank, int ranks, std::size_t parameter_count);

  // Delivers inbound messages: applies new ones to `parameters` and queues them for relay;
  // then pushes queued messages out as far as the links allow. Returns messages received.
  std::size_t poll(std::span<float> parameters);
  // True when an own message of `bytes` can go out now on every link (queues empty, room).
  bool can_publish(std::size_t bytes) const;
  // Applies this replica's own message to `parameters` and sends it on every link.
  void publish(std::span<const std::uint8_t> message, std::span<float> parameters);
  // Messages still queued for some link.
  bool has_backlog() const;

  // Highest contiguous seq applied per origin rank.
  const std::vector<std::uint64_t>& version_vector() const { return applied_upto_; }
  bool has_applied(int origin, std::uint64_t seq) const;
  const ExchangeStats& stats() const { return stats_; }
  const std::string& last_error() const { return last_error_; }

 private:
  // Records (origin, seq) as applied; false if it already was.
  bool mark_applied(int origin, std::uint64_t seq);

  comm::DataPlane& plane_;
  int self_;
  std::size_t parameter_count_;
  std::vector<std::uint64_t> applied_upto_;
  std::vector<std::set<std::uint64_t>> applied_above_;
  comm::Relay relay_;
  ExchangeStats stats_;
  std::string last_error_;
};

}  // namespace gradshare::train
