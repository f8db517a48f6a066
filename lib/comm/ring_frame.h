// ring_frame.h: the byte layout of an inbound ring, shared by the RMA and in-process data planes.
//
// A ring is `capacity` bytes (a multiple of 8) written by exactly one sender and read by one
// receiver. Both sides count bytes with 64-bit monotonically increasing stream offsets: the
// sender's tail (bytes ever written) and the receiver's head (bytes ever consumed); the ring
// position of stream offset o is o % capacity, free space is capacity - (tail - head).
// A message is one frame: an 8-byte header {uint32 payload length, uint32 check} followed by the
// payload, padded to 8 bytes. A frame may wrap around the end of the ring (it is then written in
// two pieces). The check mixes the length with the frame's stream offset, so stale bytes from an
// earlier lap, zeroed memory or garbage are recognised instead of being parsed as messages.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/errors.h"

namespace gradshare::comm {

inline constexpr std::size_t kFrameHeaderBytes = 8;

// A ring whose contents or counters make no sense (garbage, torn or corrupted memory).
class FrameError : public core::RuntimeError {
 public:
  using core::RuntimeError::RuntimeError;
};

// Usable ring size for a configured size: rounded down to a multiple of 8.
std::size_t ring_capacity(std::size_t ring_bytes);
// Largest payload a ring of `capacity` bytes carries (one frame filling the whole ring).
std::size_t ring_max_payload(std::size_t capacity);
// Bytes a payload of `payload_bytes` occupies in a ring (header + payload + padding).
std::size_t frame_bytes(std::size_t payload_bytes);

// Writes the frame for `payload` at stream offset `offset` into `out` (resized to frame_bytes).
void build_frame(std::span<const std::uint8_t> payload, std::uint64_t offset,
                 std::vector<std::uint8_t>& out);

// One contiguous piece of a circular copy: `length` bytes from `source_offset` of the source go
// to `ring_offset` of the ring.
struct RingPiece {
  std::size_t ring_offset = 0;
  std::size_t source_offset = 0;
  std::size_t length = 0;
};
// The one or two pieces (the second has length 0 when the copy does not wrap) that place
// `length` bytes at stream offset `offset` of a ring of `capacity` bytes.
std::array<RingPiece, 2> ring_pieces(std::size_t capacity, std::uint64_t offset,
                                     std::size_t length);
// Copies `bytes` into a ring in local memory at stream offset `offset`.
void copy_into_ring(std::uint8_t* ring, std::size_t capacity, std::uint64_t offset,
                    std::span<const std::uint8_t> bytes);

// Delivers every frame in [head, tail) of a ring in local memory, in order, and advances `head`
// past each frame before delivering it (so a throwing callback never sees it twice). A payload
// that wraps is assembled in `scratch`; the span handed to `deliver` is valid only during the
// call. Throws FrameError for counters that cannot be right (tail behind head, more than a ring
// ahead, not 8-aligned) or a frame whose check, length or extent is wrong. Returns the number
// of frames delivered.
std::size_t consume_frames(const std::uint8_t* ring, std::size_t capacity, std::uint64_t& head,
                           std::uint64_t tail, std::vector<std::uint8_t>& scratch,
                           const std::function<void(std::span<const std::uint8_t>)>& deliver);

}  // namespace gradshare::comm
