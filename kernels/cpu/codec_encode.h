// codec_encode.h: the encoder's dense passes over the residual r, each as a portable scalar twin
// and an AVX2 twin with bit-identical results (the clipped-mass sum excepted, see clip):
//   encode_select  r += u, every |r| >= tau becomes a signed 1-based index and r -= sign * tau
//   encode_bitmap  the same written as 2-bit codes, optionally with half quanta (shake-up)
//   add_checked    r += u (back-pressure: the update stays in the residual)
//   count_firing   how many |r + u| >= tau, changing nothing (the encoder's congestion cap)
//   clip           clamp r to [-limit, limit] and return the mass removed
// The passes work in chunks of 8 elements and check every r + u before storing a chunk: a
// chunk with a NaN or infinite value is left untouched and the pass stops there, so the caller
// can report the element and knows exactly which prefix was absorbed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "kernels/cpu/codec_isa.h"

namespace gradshare::kernels::cpu {

inline constexpr std::size_t kNoBadIndex = std::numeric_limits<std::size_t>::max();

struct SelectResult {
  std::size_t processed = 0;      // elements [0, processed) absorbed and encoded
  std::size_t count = 0;          // indices written
  std::size_t bad = kNoBadIndex;  // first element with a non-finite r + u (processed <= bad)
};

// r += u; each element j with |r_j| >= tau writes +(first_index + j + 1) (r_j > 0) or
// -(first_index + j + 1) (r_j < 0) to out, in increasing j, and r_j -= copysign(tau, r_j).
// Stops early, at a multiple of 8, before a chunk that might not fit in out or that holds a
// non-finite r + u. out[count, out.size()) is scratch and may be overwritten.
// Requires u.size() == r.size() and first_index + u.size() <= INT32_MAX.
SelectResult encode_select(Isa isa, std::span<const float> u, std::span<float> r,
                           std::size_t first_index, float tau, std::span<std::int32_t> out);

// The half quantum of a shake-up bitmap: an element with threshold <= |r| < tau whose sign is
// the sign of `value` is sent as kCodeHalf and r -= value. threshold = +inf disables it.
struct HalfQuantum {
  float threshold = std::numeric_limits<float>::infinity();
  float value = 0.0f;
};

struct BitmapResult {
  std::size_t processed = 0;      // elements [0, processed) absorbed and encoded
  std::size_t entries = 0;        // non-zero codes written (half ones included)
  std::size_t half_entries = 0;   // kCodeHalf codes written
  std::size_t bad = kNoBadIndex;  // as in SelectResult
};

// r += u, then element j gets kCodePlus/kCodeMinus when |r_j| >= tau (r_j -= copysign(tau, r_j)),
// kCodeHalf as described above, kCodeNone otherwise; codes go to bitmap in the layout of
// codec_bitmap_layout.h, which writes every byte [0, bitmap_bytes(processed)).
// Requires bitmap.size() >= bitmap_bytes(u.size()).
BitmapResult encode_bitmap(Isa isa, std::span<const float> u, std::span<float> r, float tau,
                           HalfQuantum half, std::span<std::uint8_t> bitmap);

struct AddResult {
  std::size_t processed = 0;
  std::size_t bad = kNoBadIndex;
};

// r += u, stopping (at a multiple of 8) before a chunk with a non-finite r + u.
AddResult add_checked(Isa isa, std::span<const float> u, std::span<float> r);

// The number of j with |r_j + u_j| >= tau (r + u rounded as add_checked rounds it); NaNs never
// count, infinities do. Reads only.
std::size_t count_firing(Isa isa, std::span<const float> u, std::span<const float> r, float tau);

// Clamps every r_j to [-limit, limit]; returns sum_j max(|r_j| - limit, 0) accumulated in double
// (the twins add in different orders, so the sum may differ in its last bits; r does not).
double clip(Isa isa, std::span<float> r, float limit);

}  // namespace gradshare::kernels::cpu
