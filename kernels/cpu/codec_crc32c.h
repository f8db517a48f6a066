// codec_crc32c.h: CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of codec
// messages. The SSE4.2 crc32 instruction is used when the CPU has it, a table otherwise; both
// give the same value. crc32c(crc32c(0, a), b) == crc32c(0, a followed by b).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cpu {

// Continues `crc` (0 to start) over `size` bytes at `data`; best implementation.
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size);

// The two twins, for tests and benchmarks. crc32c_sse42 needs SSE4.2: call it only when
// crc32c_hardware_supported() (off x86 it falls back to the table).
std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t size);
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t size);
bool crc32c_hardware_supported();

}  // namespace gradshare::kernels::cpu
