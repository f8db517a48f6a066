// codec_rice.h: Golomb-Rice coding of a sorted signed index list, the "compressed" payload
// (Strom's entropy-coding option). Selected indices are nearly geometric gaps apart, for which a
// Rice code with the right parameter is within a few percent of the entropy.
//
// Payload layout: byte 0 holds the Rice parameter k (0..31). A bit stream follows, filled from
// the least significant bit of each byte. Entry j, with 1-based index i_j = |v_j| and
// i_{-1} = 0, codes its gap g = i_j - i_{j-1} (>= 1) as
//   q = (g - 1) >> k zero bits, one 1 bit, the k low bits of g - 1 (least significant first),
//   then a sign bit (1: -tau, 0: +tau).
// The bits after the last entry up to the byte boundary are zero and no byte follows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gradshare::kernels::cpu {

struct RiceChoice {
  unsigned k = 0;
  std::size_t payload_bytes = 1;
};

// The parameter k giving the shortest payload for these signed 1-based indices (strictly
// increasing |v|), and that payload's exact size. For c entries among n parameters the size is
// at most 2 + c * (log2(n / c) + 4) / 8 bytes, so never above n / 2 + 2.
RiceChoice rice_choose(std::span<const std::int32_t> indices);

// Writes the payload; payload.size() must be rice_choose(indices).payload_bytes for this k.
void rice_encode(std::span<const std::int32_t> indices, unsigned k,
                 std::span<std::uint8_t> payload);

// Checks that the payload codes exactly `count` entries with indices in 1..parameter_count,
// and the layout above (parameter, truncation, padding, trailing bytes).
bool rice_validate(std::span<const std::uint8_t> payload, std::size_t count,
                   std::size_t parameter_count, std::string* error);

// target[i - 1] += plus (or minus for a negative entry); the payload must have validated.
void rice_apply(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                float plus, float minus);

// Decodes into signed 1-based indices; false (with *error) on a payload that does not validate.
bool rice_decode(std::span<const std::uint8_t> payload, std::size_t count,
                 std::size_t parameter_count, std::vector<std::int32_t>& indices,
                 std::string* error);

}  // namespace gradshare::kernels::cpu
