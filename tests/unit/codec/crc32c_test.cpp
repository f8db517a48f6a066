// crc32c_test.cpp: CRC32C against the standard check value and the two twins against each other.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/codec_crc32c.h"

namespace gradshare::kernels::cpu {
namespace {

TEST(Crc32c, StandardCheckValue) {
  const std::string text = "123456789";
  EXPECT_EQ(crc32c_table(0, text.data(), text.size()), 0xE3069283u);
  EXPECT_EQ(crc32c(0, text.data(), text.size()), 0xE3069283u);
  EXPECT_EQ(crc32c(0, nullptr, 0), 0u);
  const std::vector<std::uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(0, zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(Crc32c, TwinsAgreeAndChain) {
  if (!crc32c_hardware_supported()) GTEST_SKIP() << "no SSE4.2";
  core::Rng rng(1);
  std::vector<std::uint8_t> data(4096);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng.below(256));
  for (std::size_t offset = 0; offset < 9; ++offset) {
    for (std::size_t size = 0; size + offset <= data.size(); size += 1 + size / 3) {
      const std::uint32_t a = crc32c_table(0, data.data() + offset, size);
      ASSERT_EQ(a, crc32c_sse42(0, data.data() + offset, size)) << offset << " " << size;
      const std::size_t half = size / 2;
      ASSERT_EQ(a, crc32c(crc32c(0, data.data() + offset, half), data.data() + offset + half,
                          size - half));
    }
  }
}

}  // namespace
}  // namespace gradshare::kernels::cpu
