// codec_encode.cpp: scalar and AVX2 twins of the encoder's dense passes (see codec_encode.h).
// Both twins use the same IEEE operations in the same order per element (add, compare,
// subtract; no FMA), so they leave identical residuals and emit identical codes.
#include "kernels/cpu/codec_encode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/cpu/codec_bitmap_layout.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gradshare::kernels::cpu {
namespace {

constexpr std::size_t kChunk = 8;

// Index of the first element of [0, len) whose r + u is not finite, or len.
std::size_t first_nonfinite(const float* u, const float* r, std::size_t len) {
  for (std::size_t j = 0; j < len; ++j) {
    if (!std::isfinite(r[j] + u[j])) return j;
  }
  return len;
}

std::int32_t signed_index(std::size_t zero_based, bool negative) {
  const auto one_based = static_cast<std::int32_t>(zero_based + 1);
  return negative ? -one_based : one_based;
}

// ---------------------------------------------------------------- scalar twins

SelectResult select_scalar(std::span<const float> u, std::span<float> r, std::size_t first_index,
                           float tau, std::span<std::int32_t> out) {
  const std::size_t n = u.size();
  SelectResult result;
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t len = std::min(kChunk, n - i);
    if (result.count + len > out.size()) break;
    const std::size_t bad = first_nonfinite(u.data() + i, r.data() + i, len);
    if (bad < len) {
      result.bad = i + bad;
      break;
    }
    for (std::size_t j = i; j < i + len; ++j) {
      float v = r[j] + u[j];
      if (std::fabs(v) >= tau) {
        out[result.count++] = signed_index(first_index + j, std::signbit(v));
        v -= std::copysign(tau, v);
      }
      r[j] = v;
    }
    result.processed = i + len;
  }
  return result;
}

// Code of one element and the residual it leaves (see encode_bitmap).
std::uint8_t bitmap_code(float& v, float tau, const HalfQuantum& half, bool half_negative) {
  const float a = std::fabs(v);
  if (a >= tau) {
    const bool negative = std::signbit(v);
    v -= std::copysign(tau, v);
    return negative ? kCodeMinus : kCodePlus;
  }
  if (a >= half.threshold && std::signbit(v) == half_negative) {
    v -= half.value;
    return kCodeHalf;
  }
  return kCodeNone;
}

BitmapResult bitmap_scalar(std::span<const float> u, std::span<float> r, float tau,
                           HalfQuantum half, std::span<std::uint8_t> bitmap) {
  const std::size_t n = u.size();
  const bool half_negative = std::signbit(half.value);
  BitmapResult result;
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t len = std::min(kChunk, n - i);
    const std::size_t bad = first_nonfinite(u.data() + i, r.data() + i, len);
    if (bad < len) {
      result.bad = i + bad;
      break;
    }
    std::uint16_t codes = 0;
    for (std::size_t j = 0; j < len; ++j) {
      float v = r[i + j] + u[i + j];
      const std::uint8_t code = bitmap_code(v, tau, half, half_negative);
      r[i + j] = v;
      codes = static_cast<std::uint16_t>(codes | (code << (2 * j)));
      result.entries += code != kCodeNone;
      result.half_entries += code == kCodeHalf;
    }
    const std::size_t bytes = (len + 3) / 4;
    for (std::size_t b = 0; b < bytes; ++b) {
      bitmap[i / 4 + b] = static_cast<std::uint8_t>(codes >> (8 * b));
    }
    result.processed = i + len;
  }
  return result;
}

AddResult add_scalar(std::span<const float> u, std::span<float> r) {
  const std::size_t n = u.size();
  AddResult result;
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t len = std::min(kChunk, n - i);
    const std::size_t bad = first_nonfinite(u.data() + i, r.data() + i, len);
    if (bad < len) {
      result.bad = i + bad;
      break;
    }
    for (std::size_t j = i; j < i + len; ++j) r[j] += u[j];
    result.processed = i + len;
  }
  return result;
}

std::size_t count_firing_scalar(std::span<const float> u, std::span<const float> r, float tau) {
  std::size_t count = 0;
  for (std::size_t j = 0; j < u.size(); ++j) count += std::fabs(r[j] + u[j]) >= tau ? 1 : 0;
  return count;
}

double clip_scalar(std::span<float> r, float limit) {
  double mass = 0.0;
  for (float& v : r) {
    const float a = std::fabs(v);
    if (a > limit) {
      mass += static_cast<double>(a - limit);
      v = std::copysign(limit, v);
    }
  }
  return mass;
}

// ---------------------------------------------------------------- AVX2 twins
#if defined(__x86_64__)

// kSpread[b] moves bit j of b to bit 2j: interleaves the low and high bits of 8 2-bit codes.
constexpr std::array<std::uint16_t, 256> make_spread() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    unsigned s = 0;
    for (unsigned j = 0; j < 8; ++j) s |= ((b >> j) & 1u) << (2 * j);
    table[b] = static_cast<std::uint16_t>(s);
  }
  return table;
}
constexpr std::array<std::uint16_t, 256> kSpread = make_spread();

#define GS_AVX2 __attribute__((target("avx2,popcnt")))

// Lane mask (8 bits) of the lanes of v that are NaN or infinite.
GS_AVX2 inline unsigned nonfinite_lanes(__m256 abs_v) {
  const __m256i above = _mm256_cmpgt_epi32(_mm256_castps_si256(abs_v),
                                           _mm256_set1_epi32(0x7F7FFFFF));  // FLT_MAX's bits
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(above)));
}

GS_AVX2 inline __m256 abs_ps(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}

// kLeftPack[m] lists the lanes set in the 8-bit mask m, in order: the permutation that packs
// the selected lanes to the front of a vector (AVX2 has no compress instruction).
struct LeftPackTable {
  alignas(32) std::int32_t lanes[256][8];
};
constexpr LeftPackTable make_left_pack() {
  LeftPackTable table{};
  for (unsigned m = 0; m < 256; ++m) {
    unsigned out = 0;
    for (unsigned lane = 0; lane < 8; ++lane) {
      if ((m >> lane) & 1u) table.lanes[m][out++] = static_cast<std::int32_t>(lane);
    }
  }
  return table;
}
constexpr LeftPackTable kLeftPack = make_left_pack();

// Branch-free in the selection: every chunk stores its packed indices (8 lanes, of which
// popcount(mask) count), so the speed does not depend on the density's predictability.
GS_AVX2 SelectResult select_avx2(std::span<const float> u, std::span<float> r,
                                 std::size_t first_index, float tau, std::span<std::int32_t> out) {
  const std::size_t n = u.size();
  const float* up = u.data();
  float* rp = r.data();
  std::int32_t* op = out.data();
  const std::size_t capacity = out.size();
  const __m256 vtau = _mm256_set1_ps(tau);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256i eight = _mm256_set1_epi32(8);
  // 1-based indices of the current chunk's lanes (first_index + n <= INT32_MAX: no overflow).
  __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(first_index)),
                                   _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8));
  SelectResult result;
  std::size_t count = 0;
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    if (count + kChunk > capacity) {
      result.processed = i;
      result.count = count;
      return result;
    }
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(rp + i), _mm256_loadu_ps(up + i));
    const __m256 a = abs_ps(v);
    if (const unsigned bad = nonfinite_lanes(a); bad != 0) {
      result.processed = i;
      result.count = count;
      result.bad = i + static_cast<std::size_t>(std::countr_zero(bad));
      return result;
    }
    const __m256 fire = _mm256_cmp_ps(a, vtau, _CMP_GE_OQ);
    const unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(fire));
    // Fired lanes have |v| >= tau > 0, so the sign of v's bits is the sign of the quantum.
    const __m256i signed_indices = _mm256_sign_epi32(index, _mm256_castps_si256(v));
    const __m256 quantum = _mm256_or_ps(_mm256_and_ps(v, sign_bit), vtau);  // copysign(tau, v)
    v = _mm256_sub_ps(v, _mm256_and_ps(quantum, fire));
    const __m256i pack = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLeftPack.lanes[mask]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(op + count),
                        _mm256_permutevar8x32_epi32(signed_indices, pack));
    count += static_cast<std::size_t>(std::popcount(mask));
    _mm256_storeu_ps(rp + i, v);
    index = _mm256_add_epi32(index, eight);
  }
  result.processed = i;
  result.count = count;
  if (i < n) {
    const SelectResult tail =
        select_scalar(u.subspan(i), r.subspan(i), first_index + i, tau, out.subspan(count));
    result.processed += tail.processed;
    result.count += tail.count;
    if (tail.bad != kNoBadIndex) result.bad = i + tail.bad;
  }
  return result;
}

GS_AVX2 BitmapResult bitmap_avx2(std::span<const float> u, std::span<float> r, float tau,
                                 HalfQuantum half, std::span<std::uint8_t> bitmap) {
  const std::size_t n = u.size();
  const float* up = u.data();
  float* rp = r.data();
  std::uint8_t* bp = bitmap.data();
  const bool half_negative = std::signbit(half.value);
  const __m256 vtau = _mm256_set1_ps(tau);
  const __m256 vhalf_threshold = _mm256_set1_ps(half.threshold);
  const __m256 vhalf = _mm256_set1_ps(half.value);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 zero = _mm256_setzero_ps();
  BitmapResult result;
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(rp + i), _mm256_loadu_ps(up + i));
    const __m256 a = abs_ps(v);
    if (const unsigned bad = nonfinite_lanes(a); bad != 0) {
      result.processed = i;
      result.bad = i + static_cast<std::size_t>(std::countr_zero(bad));
      return result;
    }
    const __m256 full = _mm256_cmp_ps(a, vtau, _CMP_GE_OQ);
    const __m256 sign_ok =
        half_negative ? _mm256_cmp_ps(v, zero, _CMP_LT_OQ) : _mm256_cmp_ps(v, zero, _CMP_GT_OQ);
    const __m256 halfq = _mm256_andnot_ps(
        full, _mm256_and_ps(_mm256_cmp_ps(a, vhalf_threshold, _CMP_GE_OQ), sign_ok));
    const unsigned full_mask = static_cast<unsigned>(_mm256_movemask_ps(full));
    const unsigned half_mask = static_cast<unsigned>(_mm256_movemask_ps(halfq));
    const unsigned negative = static_cast<unsigned>(_mm256_movemask_ps(v));
    const __m256 quantum = _mm256_or_ps(_mm256_and_ps(v, sign_bit), vtau);
    v = _mm256_sub_ps(v, _mm256_or_ps(_mm256_and_ps(quantum, full), _mm256_and_ps(vhalf, halfq)));
    result.entries += static_cast<std::size_t>(std::popcount(full_mask | half_mask));
    result.half_entries += static_cast<std::size_t>(std::popcount(half_mask));
    // Code bit 0 is set for kCodePlus and kCodeHalf, bit 1 for kCodeMinus and kCodeHalf.
    const unsigned low = (full_mask & ~negative) | half_mask;
    const unsigned high = (full_mask & negative) | half_mask;
    const auto codes =
        static_cast<std::uint16_t>(kSpread[low & 0xFFu] | (kSpread[high & 0xFFu] << 1));
    std::memcpy(bp + i / 4, &codes, sizeof codes);
    _mm256_storeu_ps(rp + i, v);
  }
  result.processed = i;
  if (i < n) {
    const BitmapResult tail =
        bitmap_scalar(u.subspan(i), r.subspan(i), tau, half, bitmap.subspan(i / 4));
    result.processed += tail.processed;
    result.entries += tail.entries;
    result.half_entries += tail.half_entries;
    if (tail.bad != kNoBadIndex) result.bad = i + tail.bad;
  }
  return result;
}

GS_AVX2 AddResult add_avx2(std::span<const float> u, std::span<float> r) {
  const std::size_t n = u.size();
  AddResult result;
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(r.data() + i), _mm256_loadu_ps(u.data() + i));
    if (const unsigned bad = nonfinite_lanes(abs_ps(v)); bad != 0) {
      result.processed = i;
      result.bad = i + static_cast<std::size_t>(std::countr_zero(bad));
      return result;
    }
    _mm256_storeu_ps(r.data() + i, v);
  }
  result.processed = i;
  if (i < n) {
    const AddResult tail = add_scalar(u.subspan(i), r.subspan(i));
    result.processed += tail.processed;
    if (tail.bad != kNoBadIndex) result.bad = i + tail.bad;
  }
  return result;
}

GS_AVX2 std::size_t count_firing_avx2(std::span<const float> u, std::span<const float> r,
                                      float tau) {
  const std::size_t n = u.size();
  const __m256 vtau = _mm256_set1_ps(tau);
  std::size_t count = 0;
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(r.data() + i), _mm256_loadu_ps(u.data() + i));
    const __m256 fires = _mm256_cmp_ps(abs_ps(v), vtau, _CMP_GE_OQ);  // NaN: false
    count += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(_mm256_movemask_ps(fires))));
  }
  return count + count_firing_scalar(u.subspan(i), r.subspan(i), tau);
}

GS_AVX2 double clip_avx2(std::span<float> r, float limit) {
  const std::size_t n = r.size();
  float* rp = r.data();
  const __m256 vlimit = _mm256_set1_ps(limit);
  const __m256 vneg_limit = _mm256_set1_ps(-limit);
  __m256d mass = _mm256_setzero_pd();
  std::size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    const __m256 v = _mm256_loadu_ps(rp + i);
    const __m256 a = abs_ps(v);
    const __m256 over = _mm256_cmp_ps(a, vlimit, _CMP_GT_OQ);
    if (_mm256_movemask_ps(over) == 0) continue;
    const __m256 excess = _mm256_and_ps(_mm256_sub_ps(a, vlimit), over);
    mass = _mm256_add_pd(mass, _mm256_cvtps_pd(_mm256_castps256_ps128(excess)));
    mass = _mm256_add_pd(mass, _mm256_cvtps_pd(_mm256_extractf128_ps(excess, 1)));
    _mm256_storeu_ps(rp + i, _mm256_min_ps(_mm256_max_ps(v, vneg_limit), vlimit));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, mass);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + clip_scalar(r.subspan(i), limit);
}

#undef GS_AVX2
#endif  // __x86_64__

}  // namespace

SelectResult encode_select(Isa isa, std::span<const float> u, std::span<float> r,
                           std::size_t first_index, float tau, std::span<std::int32_t> out) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return select_avx2(u, r, first_index, tau, out);
#endif
  return select_scalar(u, r, first_index, tau, out);
}

BitmapResult encode_bitmap(Isa isa, std::span<const float> u, std::span<float> r, float tau,
                           HalfQuantum half, std::span<std::uint8_t> bitmap) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return bitmap_avx2(u, r, tau, half, bitmap);
#endif
  return bitmap_scalar(u, r, tau, half, bitmap);
}

AddResult add_checked(Isa isa, std::span<const float> u, std::span<float> r) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return add_avx2(u, r);
#endif
  return add_scalar(u, r);
}

std::size_t count_firing(Isa isa, std::span<const float> u, std::span<const float> r, float tau) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return count_firing_avx2(u, r, tau);
#endif
  return count_firing_scalar(u, r, tau);
}

double clip(Isa isa, std::span<float> r, float limit) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return clip_avx2(r, limit);
#endif
  return clip_scalar(r, limit);
}

}  // namespace gradshare::kernels::cpu
