// codec_decode.cpp: sparse and bitmap payload validation and decode-apply.
#include "kernels/cpu/codec_decode.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/cpu/codec_bitmap_layout.h"

namespace gradshare::kernels::cpu {
namespace {

constexpr std::uint64_t kLowBits = 0x5555555555555555ull;  // bit 0 of every 2-bit code

std::int32_t load_i32(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);  // the format is little-endian, as is every supported host
  return v;
}

// Loads the bytes [offset, offset + 8) of the payload as one word, zero beyond its end.
std::uint64_t load_word(std::span<const std::uint8_t> payload, std::size_t offset) {
  std::uint64_t w = 0;
  if (offset + 8 <= payload.size()) {
    std::memcpy(&w, payload.data() + offset, 8);  // the common case: one fixed-size load
  } else {
    std::memcpy(&w, payload.data() + offset, payload.size() - offset);
  }
  return w;
}

struct CodeCounts {
  std::size_t nonzero = 0;
  std::size_t half = 0;
};

// Counts the non-zero and the kCodeHalf codes; popcount needs the popcnt instruction to be fast
// (without it the compiler calls a library routine), hence the twin chosen at run time.
template <class Popcount>
CodeCounts count_codes(std::span<const std::uint8_t> payload, Popcount&& popcount) {
  CodeCounts counts;
  for (std::size_t offset = 0; offset < payload.size(); offset += 8) {
    const std::uint64_t w = load_word(payload, offset);
    counts.nonzero += popcount((w | (w >> 1)) & kLowBits);
    counts.half += popcount(w & (w >> 1) & kLowBits);
  }
  return counts;
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) CodeCounts count_codes_popcnt(
    std::span<const std::uint8_t> payload) {
  return count_codes(
      payload, [](std::uint64_t w) { return static_cast<std::size_t>(__builtin_popcountll(w)); });
}
#endif

CodeCounts count_codes_best(std::span<const std::uint8_t> payload) {
#if defined(__x86_64__)
  static const bool has_popcnt = __builtin_cpu_supports("popcnt");
  if (has_popcnt) return count_codes_popcnt(payload);
#endif
  return count_codes(payload,
                     [](std::uint64_t w) { return static_cast<std::size_t>(std::popcount(w)); });
}

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

}  // namespace

bool validate_sparse(std::span<const std::uint8_t> payload, std::size_t count,
                     std::size_t parameter_count, std::string* error) {
  if (payload.size() / 4 != count || payload.size() % 4 != 0) {
    return fail(error, "sparse payload of " + std::to_string(payload.size()) +
                           " bytes does not hold " + std::to_string(count) + " int32 entries");
  }
  std::int64_t previous = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t v = load_i32(payload.data() + 4 * j);
    const std::int64_t index = v < 0 ? -v : v;
    if (index == 0 || index > static_cast<std::int64_t>(parameter_count)) {
      return fail(error, "sparse entry " + std::to_string(j) + " names parameter " +
                             std::to_string(v) + ", outside 1.." + std::to_string(parameter_count));
    }
    if (index <= previous) {
      return fail(error, "sparse entry " + std::to_string(j) +
                             " is not in strictly increasing index order");
    }
    previous = index;
  }
  return true;
}

void apply_sparse(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                  float plus, float minus) {
  float* t = target.data();
  const std::uint8_t* p = payload.data();
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t v = load_i32(p + 4 * j);
    // Selects, not branches: the signs are random, a branch would mispredict half the time.
    const std::int64_t index = v < 0 ? -v : v;
    t[index - 1] += v < 0 ? minus : plus;
  }
}

bool validate_bitmap(std::span<const std::uint8_t> payload, std::size_t parameter_count,
                     std::size_t count, bool half_allowed, std::string* error) {
  if (payload.size() != bitmap_bytes(parameter_count)) {
    return fail(error, "bitmap payload of " + std::to_string(payload.size()) + " bytes, expected " +
                           std::to_string(bitmap_bytes(parameter_count)) + " for " +
                           std::to_string(parameter_count) + " parameters");
  }
  const std::size_t used_bits = 2 * (parameter_count % 4);
  if (used_bits != 0 && (payload.back() >> used_bits) != 0) {
    return fail(error, "bitmap padding bits after the last parameter are not zero");
  }
  const CodeCounts codes = count_codes_best(payload);
  if (codes.nonzero != count) {
    return fail(error, "bitmap holds " + std::to_string(codes.nonzero) +
                           " non-zero codes, header says " + std::to_string(count));
  }
  if (codes.half != 0 && !half_allowed) {
    return fail(error, "bitmap holds half-quantum codes but the message is not a shake-up");
  }
  return true;
}

void apply_bitmap(std::span<const std::uint8_t> payload, std::span<float> target,
                  const std::array<float, 4>& values) {
  float* t = target.data();
  for (std::size_t offset = 0; offset < payload.size(); offset += 8) {
    const std::uint64_t w = load_word(payload, offset);
    std::uint64_t nonzero = (w | (w >> 1)) & kLowBits;
    float* base = t + 4 * offset;
    while (nonzero != 0) {
      const int bit = std::countr_zero(nonzero);
      base[bit / 2] += values[(w >> bit) & 3u];
      nonzero &= nonzero - 1;
    }
  }
}

}  // namespace gradshare::kernels::cpu
