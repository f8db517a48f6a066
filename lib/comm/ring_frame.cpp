// ring_frame.cpp: frame layout, circular copies and the frame parser.
#include "comm/ring_frame.h"

#include <cstring>
#include <limits>
#include <string>

namespace gradshare::comm {
namespace {

constexpr std::size_t kAlign = 8;

std::uint32_t frame_check(std::uint32_t length, std::uint64_t offset) {
  // A 64-bit mix (splitmix64 finaliser) of length and offset: garbage passes with odds 2^-32.
  std::uint64_t x = (offset >> 3) * 0x9E3779B97F4A7C15ull ^ (std::uint64_t{length} << 1 | 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>(x ^ (x >> 31));
}

std::string offsets(std::uint64_t head, std::uint64_t tail) {
  return " (head " + std::to_string(head) + ", tail " + std::to_string(tail) + ")";
}

}  // namespace

std::size_t ring_capacity(std::size_t ring_bytes) { return ring_bytes / kAlign * kAlign; }

std::size_t ring_max_payload(std::size_t capacity) {
  return capacity > kFrameHeaderBytes ? capacity - kFrameHeaderBytes : 0;
}

std::size_t frame_bytes(std::size_t payload_bytes) {
  return kFrameHeaderBytes + (payload_bytes + kAlign - 1) / kAlign * kAlign;
}

void build_frame(std::span<const std::uint8_t> payload, std::uint64_t offset,
                 std::vector<std::uint8_t>& out) {
  GS_CHECK(payload.size() <= std::numeric_limits<std::uint32_t>::max());
  auto length = static_cast<std::uint32_t>(payload.size());
  std::uint32_t check = frame_check(length, offset);
  out.assign(frame_bytes(payload.size()), 0);
  std::memcpy(out.data(), &length, 4);
  std::memcpy(out.data() + 4, &check, 4);
  if (!payload.empty()) std::memcpy(out.data() + kFrameHeaderBytes, payload.data(), payload.size());
}

std::array<RingPiece, 2> ring_pieces(std::size_t capacity, std::uint64_t offset,
                                     std::size_t length) {
  GS_CHECK(capacity > 0 && length <= capacity);
  auto position = static_cast<std::size_t>(offset % capacity);
  std::size_t first = std::min(length, capacity - position);
  return {RingPiece{position, 0, first}, RingPiece{0, first, length - first}};
}

void copy_into_ring(std::uint8_t* ring, std::size_t capacity, std::uint64_t offset,
                    std::span<const std::uint8_t> bytes) {
  for (const RingPiece& piece : ring_pieces(capacity, offset, bytes.size()))
    if (piece.length > 0)
      std::memcpy(ring + piece.ring_offset, bytes.data() + piece.source_offset, piece.length);
}

std::size_t consume_frames(const std::uint8_t* ring, std::size_t capacity, std::uint64_t& head,
                           std::uint64_t tail, std::vector<std::uint8_t>& scratch,
                           const std::function<void(std::span<const std::uint8_t>)>& deliver) {
  if (tail < head) throw FrameError("ring tail went backwards" + offsets(head, tail));
  if (tail - head > capacity)
    throw FrameError("ring tail more than " + std::to_string(capacity) + " bytes ahead" +
                     offsets(head, tail));
  if (tail % kAlign != 0) throw FrameError("ring tail not 8-aligned" + offsets(head, tail));
  std::size_t delivered = 0;
  while (head < tail) {
    // Headers never wrap: frames start 8-aligned and the capacity is a multiple of 8.
    auto position = static_cast<std::size_t>(head % capacity);
    std::uint32_t length = 0;
    std::uint32_t check = 0;
    std::memcpy(&length, ring + position, 4);
    std::memcpy(&check, ring + position + 4, 4);
    if (check != frame_check(length, head))
      throw FrameError("bad frame header at stream offset " + std::to_string(head) + " (length " +
                       std::to_string(length) + ")" + offsets(head, tail));
    std::size_t size = frame_bytes(length);
    if (size > tail - head)
      throw FrameError("frame of " + std::to_string(length) + " bytes at stream offset " +
                       std::to_string(head) + " runs past the tail" + offsets(head, tail));
    std::uint64_t payload_offset = head + kFrameHeaderBytes;
    head += size;
    auto pieces = ring_pieces(capacity, payload_offset, length);
    if (pieces[1].length == 0) {
      deliver(std::span<const std::uint8_t>(ring + pieces[0].ring_offset, length));
    } else {
      scratch.resize(length);
      for (const RingPiece& piece : pieces)
        std::memcpy(scratch.data() + piece.source_offset, ring + piece.ring_offset, piece.length);
      deliver(std::span<const std::uint8_t>(scratch.data(), length));
    }
    ++delivered;
  }
  return delivered;
}

}  // namespace gradshare::comm
