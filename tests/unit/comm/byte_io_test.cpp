// byte_io_test.cpp: ByteWriter / ByteReader round trips and rejection of malformed input.
#include "comm/byte_io.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"

namespace gradshare::comm {
namespace {

struct Grant {
  std::int64_t partition;
  std::int32_t epoch;
  float learning_rate;
};

TEST(ByteIo, RoundTrip) {
  ByteWriter writer;
  writer.put<std::int32_t>(-7).put(Grant{12, 3, 0.5f}).put(true);
  writer.put_vector(std::vector<double>{1.5, -2.25}).put_string("rank 3");
  std::vector<std::uint8_t> bytes = writer.take();
  ByteReader reader(bytes);
  EXPECT_EQ(reader.get<std::int32_t>(), -7);
  Grant grant = reader.get<Grant>();
  EXPECT_EQ(grant.partition, 12);
  EXPECT_EQ(grant.epoch, 3);
  EXPECT_EQ(grant.learning_rate, 0.5f);
  EXPECT_TRUE(reader.get<bool>());
  EXPECT_EQ(reader.get_vector<double>(), (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(reader.get_string(), "rank 3");
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_NO_THROW(reader.expect_end());
}

TEST(ByteIo, ShortInputThrowsNamingTheMessage) {
  ByteWriter writer;
  writer.put<std::uint32_t>(5);
  ByteReader reader(writer.bytes(), "partition grant");
  try {
    reader.get<std::uint64_t>();
    FAIL() << "read 8 bytes out of 4";
  } catch (const core::RuntimeError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("malformed partition grant"), std::string::npos) << what;
    EXPECT_NE(what.find("need 8 bytes at offset 0, 4 left"), std::string::npos) << what;
  }
}

TEST(ByteIo, HugeCountIsRejectedBeforeAllocating) {
  ByteWriter writer;
  writer.put<std::uint64_t>(std::uint64_t{1} << 60).put<double>(1.0);
  ByteReader reader(writer.bytes());
  EXPECT_THROW(reader.get_vector<double>(), core::RuntimeError);
  ByteReader strings(writer.bytes());
  EXPECT_THROW(strings.get_string(), core::RuntimeError);
}

TEST(ByteIo, TruncatedVectorIsRejected) {
  ByteWriter writer;
  writer.put_vector(std::vector<std::int32_t>{1, 2, 3});
  std::vector<std::uint8_t> bytes = writer.take();
  bytes.pop_back();
  ByteReader reader(bytes);
  EXPECT_THROW(reader.get_vector<std::int32_t>(), core::RuntimeError);
}

TEST(ByteIo, InvalidBoolAndTrailingBytesAreRejected) {
  std::vector<std::uint8_t> bytes{2};
  ByteReader reader(bytes);
  EXPECT_THROW(reader.get<bool>(), core::RuntimeError);
  std::vector<std::uint8_t> longer{1, 0};
  ByteReader trailing(longer);
  EXPECT_TRUE(trailing.get<bool>());
  EXPECT_THROW(trailing.expect_end(), core::RuntimeError);
}

TEST(ByteIo, EmptyInput) {
  ByteReader reader({});
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_THROW(reader.get<std::uint8_t>(), core::RuntimeError);
}

}  // namespace
}  // namespace gradshare::comm
