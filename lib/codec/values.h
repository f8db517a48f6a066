// values.h: the values encoding (Encoding::kValues), an aggregating relay's message: each element
// it selects (by its threshold, or every owed one up to the cap) leaves whole
// (codec::Encoder::carry_values), as a bfloat16 value, so an entry costs 2 bytes plus its
// Rice-coded index gap instead of exact's 8.
//
//   payload   entry_count uint16: the bfloat16 bits of each entry's |value| (sign bit 0, finite,
//             not zero), in index order; then the compressed encoding's Rice stream of the
//             signed 1-based indices (kernels/cpu/codec_rice.h), whose sign bit is the value's
//             sign; the header's tau is the relay's selection threshold and means nothing to a
//             decoder
//
// A value's rounding to bfloat16 (8 significant bits, nearest, ties to even) is exact to undo:
// the sender keeps value - sent in its residual, so nothing is lost, it only waits for the
// element's next message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gradshare::codec {

// The bfloat16 nearest a finite float (ties to even); a float that would round to infinity is
// truncated to the largest finite bfloat16 of its sign.
std::uint16_t to_bfloat16(float value);
float from_bfloat16(std::uint16_t bits);

// Upper bound of a values payload of `count` entries among n parameters, and the most entries
// whose bound fits in `payload_bytes`.
std::size_t values_payload_bound(std::size_t count, std::size_t n);
std::size_t values_entries_within(std::size_t payload_bytes, std::size_t n);

// Writes the payload of residual's elements at `indices` (ascending, each value a normal float)
// after out's first kHeaderBytes (out is resized; the caller seals the header), and takes what
// each entry carries out of `residual` (what rounding left stays).
void write_values_payload(std::span<float> residual, std::span<const std::uint32_t> indices,
                          std::vector<std::uint8_t>& out);

// One decoded entry: the layout of an exact record (codec/exact.h), so the GPU twin applies
// decoded entries with the exact kernel.
struct ValueEntry {
  std::uint32_t index;  // 0-based
  float value;
};

// Checks a values payload of `count` entries for n parameters and decodes it into `entries`
// (replaced), reading the Rice stream once; false with *error on a malformed payload.
bool decode_values(std::span<const std::uint8_t> payload, std::size_t count, std::size_t n,
                   std::vector<ValueEntry>& entries, std::string* error);

}  // namespace gradshare::codec
