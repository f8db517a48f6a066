// codec_decode.h: validation and fused decode-apply of sparse and bitmap payloads. Apply adds
// a value at each selected parameter in one pass over the payload (no dense temporary): the
// caller passes the values, so one kernel serves "params -= value" and "acc += value".
// Validation never reads outside the payload; apply assumes a payload that validated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gradshare::kernels::cpu {

// Sparse payload: `count` little-endian int32 v, |v| the 1-based parameter index (strictly
// increasing), the sign of v the sign of the quantum. Checks payload.size() == 4 * count,
// every 1 <= |v| <= parameter_count and strict order; on failure sets *error (if not null).
bool validate_sparse(std::span<const std::uint8_t> payload, std::size_t count,
                     std::size_t parameter_count, std::string* error);
// target[|v| - 1] += (v > 0 ? plus : minus) for every entry.
void apply_sparse(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                  float plus, float minus);

// Bitmap payload (codec_bitmap_layout.h): checks the length, that exactly `count` codes are
// non-zero, that the padding bits are zero and, unless half_allowed, that no kCodeHalf occurs.
bool validate_bitmap(std::span<const std::uint8_t> payload, std::size_t parameter_count,
                     std::size_t count, bool half_allowed, std::string* error);
// target[j] += values[code_j] for every non-zero code (values[0] is ignored).
void apply_bitmap(std::span<const std::uint8_t> payload, std::span<float> target,
                  const std::array<float, 4>& values);

}  // namespace gradshare::kernels::cpu
