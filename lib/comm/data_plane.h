// data_plane.h: the interface every transport of encoded updates implements (RMA rings,
// two-sided messages, in-process threads), so relay/dedupe logic runs unchanged on any of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace gradshare::comm {

struct TransportStats {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;  // payload bytes, framing not counted
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t back_pressure_events = 0;  // try_send calls refused because the ring was full

  TransportStats& operator+=(const TransportStats& other);
};

// Called once per received message; the bytes are valid only during the call.
using MessageHandler = std::function<void(int from, std::span<const std::uint8_t> message)>;

// One per rank; links are the neighbour ranks in the topology (ranks of the communicator the
// plane was built on). Not thread-safe: one thread drives a plane.
class DataPlane {
 public:
  virtual ~DataPlane() = default;
  virtual const std::vector<int>& links() const = 0;
  // Non-blocking post of one encoded message to `link`; false = back-pressure (ring full),
  // nothing sent. A message over max_message_bytes() throws UserError.
  virtual bool try_send(int link, std::span<const std::uint8_t> message) = 0;
  // Whether a message of `message_bytes` would be accepted by try_send now (no side effect
  // beyond refreshing what the plane knows of the receiver's progress).
  virtual bool can_send(int link, std::size_t message_bytes) = 0;
  // Polls every inbound ring once; calls on_message(from_link, bytes) for each complete message
  // in ring order, then frees the ring space. Returns the number of messages delivered.
  // on_message may call try_send (to relay) but not poll.
  virtual std::size_t poll(const MessageHandler& on_message) = 0;
  virtual std::size_t max_message_bytes() const = 0;
  virtual TransportStats stats() const = 0;
  // After a process failure (ULFM): give up the plane's MPI objects without collective calls
  // (the dead peer would never join them), so a new plane can be built on the repaired
  // communicator. Destroying the plane afterwards is local.
  virtual void abandon() {}
};

// Throws UserError "transport.ring_bytes = R is too small for <what> of N bytes; set it to at
// least M" when a message of `message_bytes` cannot travel on `plane`. Call it at setup with the
// largest message the run can produce.
void require_message_fits(const DataPlane& plane, std::size_t message_bytes, const char* what);

// The same check for a configured ring size, before any plane exists.
void require_message_fits(std::size_t ring_bytes, std::size_t message_bytes, const char* what);

}  // namespace gradshare::comm
