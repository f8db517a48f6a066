// codec_crc32c.cpp: CRC32C with the SSE4.2 instruction and a byte-table fallback.
#include "kernels/cpu/codec_crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gradshare::kernels::cpu {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < size; ++i) c = kTable[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data,
                                                             std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t c = ~crc;
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; i < size; ++i) c32 = _mm_crc32_u8(c32, p[i]);
  return ~c32;
}

bool crc32c_hardware_supported() { return __builtin_cpu_supports("sse4.2"); }
#else
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t size) {
  return crc32c_table(crc, data, size);
}

bool crc32c_hardware_supported() { return false; }
#endif

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size) {
  static const bool hardware = crc32c_hardware_supported();
  return hardware ? crc32c_sse42(crc, data, size) : crc32c_table(crc, data, size);
}

}  // namespace gradshare::kernels::cpu
