// codec_bitmap_layout.h: the 2-bit-per-parameter layout shared by the bitmap encode and decode
// kernels. Parameter j lives in byte j / 4, bits 2 * (j % 4) and 2 * (j % 4) + 1 (least
// significant first); the bits after the last parameter of the final byte are zero.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cpu {

inline constexpr std::uint8_t kCodeNone = 0;   // nothing
inline constexpr std::uint8_t kCodePlus = 1;   // +tau
inline constexpr std::uint8_t kCodeMinus = 2;  // -tau
// Half quantum: tau / 2 with one sign for the whole message (the message says which).
inline constexpr std::uint8_t kCodeHalf = 3;

constexpr std::size_t bitmap_bytes(std::size_t parameter_count) {
  return (parameter_count + 3) / 4;
}

}  // namespace gradshare::kernels::cpu
