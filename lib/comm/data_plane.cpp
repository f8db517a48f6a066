// data_plane.cpp: TransportStats and the message-size check.
#include "comm/data_plane.h"

#include <string>

#include "comm/ring_frame.h"
#include "core/errors.h"

namespace gradshare::comm {

TransportStats& TransportStats::operator+=(const TransportStats& other) {
  messages_sent += other.messages_sent;
  bytes_sent += other.bytes_sent;
  messages_received += other.messages_received;
  bytes_received += other.bytes_received;
  back_pressure_events += other.back_pressure_events;
  return *this;
}

void require_message_fits(std::size_t ring_bytes, std::size_t message_bytes, const char* what) {
  if (message_bytes <= ring_max_payload(ring_capacity(ring_bytes))) return;
  throw core::UserError("transport.ring_bytes = " + std::to_string(ring_bytes) +
                        " is too small for " + what + " of " + std::to_string(message_bytes) +
                        " bytes; set it to at least " + std::to_string(frame_bytes(message_bytes)) +
                        " (several times that lets messages queue)");
}

void require_message_fits(const DataPlane& plane, std::size_t message_bytes, const char* what) {
  if (message_bytes <= plane.max_message_bytes()) return;
  require_message_fits(plane.max_message_bytes() + kFrameHeaderBytes, message_bytes, what);
}

}  // namespace gradshare::comm
