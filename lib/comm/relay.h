// relay.h: forwarding a message to every link but the one it came from, never dropping it.
// What a full ring refuses is queued per link (in order) and retried by flush(). The queue
// bound is a signal, not a wall: saturated() tells the owner to hold back messages that start
// here (their quanta stay in the residual) until the queues drain. Polling must go on while
// saturated: two nodes that stopped polling until the other drained would wait for each other.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "comm/data_plane.h"

namespace gradshare::comm {

inline constexpr int kOriginHere = -1;  // `from` of a message that starts at this rank

struct RelayStats {
  std::uint64_t delivered = 0;        // copies handed to the data plane
  std::uint64_t deferred = 0;         // copies that had to wait in a queue
  std::size_t peak_queued_bytes = 0;  // largest queue of one link
};

class Relay {
 public:
  // max_queued_bytes: per link, the level above which saturated() reports true.
  Relay(DataPlane& plane, std::size_t max_queued_bytes);

  // Sends `message` to every link except `from` (kOriginHere: to all links). A link with
  // queued messages gets this one queued behind them, so each link sees messages in order.
  void forward(int from, std::span<const std::uint8_t> message);
  // Sends `message` to `link` alone, behind what that link has queued.
  void send(int link, std::span<const std::uint8_t> message);
  // Retries the queues in order; returns the number of messages still queued.
  std::size_t flush();

  bool saturated() const;
  std::size_t queued_messages() const;
  std::size_t queued_bytes(int link) const;
  // The position of `link` in the plane's links (GS_CHECK that it is one).
  std::size_t index_of(int link) const;
  RelayStats stats() const { return stats_; }

 private:
  struct Queue {
    std::deque<std::vector<std::uint8_t>> messages;
    std::size_t bytes = 0;
  };
  void enqueue(Queue& queue, std::span<const std::uint8_t> message);
  void send_at(std::size_t index, std::span<const std::uint8_t> message);

  DataPlane& plane_;
  std::size_t max_queued_bytes_;
  std::vector<Queue> queues_;  // one per plane_.links()[i]
  RelayStats stats_;
};

}  // namespace gradshare::comm
