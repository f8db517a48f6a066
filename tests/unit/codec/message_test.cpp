// message_test.cpp: the wire layout byte by byte, apply vs accumulate, and every class of
// malformed message rejected with the target left untouched.
#include "codec/message.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "codec_test_util.h"
#include "kernels/cpu/codec_crc32c.h"
#include "kernels/cpu/codec_rice.h"

namespace gradshare::codec {
namespace {

using testing::make_config;
using testing::peek;
using testing::poke;
using testing::reseal;

constexpr float kTau = 1e-3f;

struct Sample {
  std::string name;
  std::vector<std::uint8_t> message;
  std::size_t n = 0;
};

// Encodes one step of an update where every 7th element fires (every 14th negative).
std::vector<std::uint8_t> encode_one(const std::string& format, std::size_t n,
                                     std::int64_t shake_up = 0) {
  config::EncodingConfig config = make_config(format, "fixed");
  config.shake_up_every_steps = shake_up;
  Encoder encoder(config, n);
  encoder.set_threshold(kTau);
  std::vector<float> u(n, 0.0f);
  for (std::size_t i = 0; i < n; i += 7) u[i] = (i % 14 == 0 ? -2.0f : 2.0f) * kTau;
  for (std::size_t i = 3; i < n; i += 11) u[i] += 0.6f * kTau;  // shake-up half band
  std::vector<std::uint8_t> message;
  encoder.encode(u, MessageMeta{2, 17, 40, 1, 0}, message);
  return message;
}

std::vector<std::uint8_t> empty_message(std::size_t n) {
  Encoder encoder(make_config("auto", "fixed"), n);
  std::vector<std::uint8_t> message;
  encoder.encode(std::vector<float>(n, 0.0f), {}, message);
  return message;
}

std::vector<Sample> samples() {
  return {{"sparse", encode_one("sparse", 100), 100},
          {"bitmap", encode_one("bitmap", 103), 103},
          {"compressed", encode_one("compressed", 1000), 1000},
          {"shake_up", encode_one("auto", 50, 1), 50},
          {"tiny", encode_one("compressed", 3), 3},
          {"empty", empty_message(10), 10}};
}

// Both decoders must refuse the message, name the problem and leave the target as it was.
void expect_rejected(const std::vector<std::uint8_t>& message, std::size_t n,
                     const std::string& fragment) {
  std::vector<float> target(n);
  for (std::size_t i = 0; i < n; ++i) target[i] = 0.25f * static_cast<float>(i);
  const std::vector<float> original = target;
  std::string error;
  EXPECT_FALSE(apply_message(message, target, &error));
  EXPECT_NE(error.find(fragment), std::string::npos) << "error: " << error;
  error.clear();
  EXPECT_FALSE(accumulate_message(message, target, &error));
  EXPECT_NE(error.find(fragment), std::string::npos) << "error: " << error;
  EXPECT_EQ(target, original);
}

TEST(MessageLayout, FieldsAtTheirDocumentedOffsets) {
  const std::vector<std::uint8_t> m = encode_one("sparse", 100);
  ASSERT_EQ(kHeaderBytes, 40u);
  EXPECT_EQ(std::string(m.begin(), m.begin() + 2), "GS");
  EXPECT_EQ(m[2], 2);  // format version
  EXPECT_EQ(m[3], 1);  // sparse
  EXPECT_EQ(peek<std::uint16_t>(m, 4), 0u);
  EXPECT_EQ(peek<std::uint16_t>(m, 6), 1u);
  EXPECT_EQ(peek<std::uint32_t>(m, 8), 2u);
  EXPECT_EQ(peek<std::uint32_t>(m, 12), 17u);
  EXPECT_EQ(peek<std::uint32_t>(m, 16), 40u);
  EXPECT_EQ(peek<float>(m, 20), kTau);
  EXPECT_EQ(peek<std::uint32_t>(m, 24), 100u);
  EXPECT_EQ(peek<std::uint32_t>(m, 28), 15u);  // 0, 7, ..., 98
  EXPECT_EQ(peek<std::uint32_t>(m, 32), 60u);
  std::uint32_t crc = kernels::cpu::crc32c(0, m.data(), 36);
  crc = kernels::cpu::crc32c(crc, m.data() + 40, m.size() - 40);
  EXPECT_EQ(peek<std::uint32_t>(m, 36), crc);
  ASSERT_EQ(m.size(), 40u + 60u);
  for (std::size_t j = 0; j < 15; ++j) {
    const auto i = static_cast<std::int32_t>(7 * j);
    EXPECT_EQ(peek<std::int32_t>(m, 40 + 4 * j), i % 14 == 0 ? -(i + 1) : i + 1);
  }
}

TEST(MessageLayout, CallerFlagsShareTheFlagsField) {
  Encoder encoder(make_config("auto", "fixed"), 10);
  std::vector<std::uint8_t> m;
  encoder.encode(std::vector<float>(10, 0.0f), MessageMeta{0, 1, 1, 0, 0x00A50000u}, m);
  EXPECT_EQ(peek<std::uint16_t>(m, 4), 0xA500u);  // caller bits 16..23 -> wire bits 8..15
  MessageHeader header;
  std::string error;
  ASSERT_TRUE(parse_header(m, 10, header, &error)) << error;
  EXPECT_EQ(header.flags, 0x00A50000u);
}

TEST(MessageLayout, LargestFieldValuesRoundTrip) {
  Encoder encoder(make_config("auto", "fixed"), 10);
  std::vector<std::uint8_t> m;
  const MessageMeta meta{0xFFFFFFFFu, kMaxSeq, kMaxIteration, static_cast<std::uint32_t>(kMaxEpoch),
                         kCallerFlagMask};
  encoder.encode(std::vector<float>(10, 0.0f), meta, m);
  MessageHeader header;
  std::string error;
  ASSERT_TRUE(parse_header(m, 10, header, &error)) << error;
  EXPECT_EQ(header.origin, meta.origin);
  EXPECT_EQ(header.seq, meta.seq);
  EXPECT_EQ(header.iteration, meta.iteration);
  EXPECT_EQ(header.epoch, meta.epoch);
  EXPECT_EQ(header.flags, meta.flags);
}

TEST(MessageLayout, BitmapCodesAndHalfFlag) {
  const std::vector<std::uint8_t> m = encode_one("auto", 50, 1);  // a shake-up
  ASSERT_EQ(m[3], 2);
  EXPECT_EQ(peek<std::uint16_t>(m, 4), kFlagShakeUp);  // first shake-up: +tau/2
  EXPECT_EQ(m.size(), kHeaderBytes + 13u);
  auto code = [&](std::size_t i) { return (m[kHeaderBytes + i / 4] >> (2 * (i % 4))) & 3; };
  EXPECT_EQ(code(0), 2);  // -tau
  EXPECT_EQ(code(7), 1);  // +tau
  EXPECT_EQ(code(3), 3);  // half
  EXPECT_EQ(code(1), 0);
  EXPECT_EQ(m.back() >> 4, 0);  // padding after parameter 49
}

TEST(Decoder, ApplyIsMinusAccumulate) {
  for (const Sample& s : samples()) {
    std::vector<float> params(s.n, 1.0f), acc(s.n, 0.0f);
    std::string error;
    ASSERT_TRUE(apply_message(s.message, params, &error)) << s.name << ": " << error;
    ASSERT_TRUE(accumulate_message(s.message, acc, &error)) << s.name << ": " << error;
    for (std::size_t i = 0; i < s.n; ++i) EXPECT_EQ(params[i], 1.0f - acc[i]) << s.name << i;
  }
}

TEST(Decoder, RejectsTruncationAndExtension) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    for (std::size_t len = 0; len < s.message.size(); ++len) {
      const std::vector<std::uint8_t> cut(s.message.begin(), s.message.begin() + len);
      expect_rejected(cut, s.n, len < kHeaderBytes ? "shorter than" : "announces");
    }
    std::vector<std::uint8_t> longer = s.message;
    longer.push_back(0);
    expect_rejected(longer, s.n, "announces");
  }
}

TEST(Decoder, RejectsBadHeaderFields) {
  const std::vector<std::uint8_t> good = encode_one("sparse", 100);
  auto edited = [&](std::size_t offset, auto value) {
    std::vector<std::uint8_t> m = good;
    poke(m, offset, value);
    reseal(m);
    return m;
  };
  expect_rejected(edited(0, std::uint16_t{0x5348}), 100, "magic");
  expect_rejected(edited(2, std::uint8_t{3}), 100, "version 3");
  expect_rejected(edited(2, std::uint8_t{0}), 100, "version 0");
  expect_rejected(edited(3, std::uint8_t{0}), 100, "encoding");
  expect_rejected(edited(3, std::uint8_t{6}), 100, "encoding");
  expect_rejected(edited(3, std::uint8_t{255}), 100, "encoding");
  expect_rejected(edited(4, std::uint16_t{4}), 100, "flags");
  expect_rejected(edited(4, std::uint16_t{0x80}), 100, "flags");
  expect_rejected(edited(20, std::numeric_limits<float>::quiet_NaN()), 100, "tau");
  expect_rejected(edited(20, std::numeric_limits<float>::infinity()), 100, "tau");
  expect_rejected(edited(20, 0.0f), 100, "tau");
  expect_rejected(edited(20, -kTau), 100, "tau");
  expect_rejected(edited(20, 1e-40f), 100, "tau");
  expect_rejected(edited(24, std::uint32_t{101}), 100, "parameters");
  expect_rejected(good, 99, "parameters");
  expect_rejected(edited(28, std::uint32_t{101}), 100, "exceeds");
  expect_rejected(edited(32, std::uint32_t{61}), 100, "announces");
  expect_rejected(edited(32, std::uint32_t{59}), 100, "announces");
  expect_rejected(edited(32, ~std::uint32_t{0}), 100, "announces");
  // A parameter count beyond the format's limit, even where the receiver claims as many.
  const std::vector<std::uint8_t> huge = edited(24, std::uint32_t{0x80000000u});
  MessageHeader header;
  std::string error;
  EXPECT_FALSE(parse_header(huge, 0x80000000u, header, &error));
  EXPECT_NE(error.find("limit"), std::string::npos) << error;
  // The caller's flag bits pass through.
  std::vector<float> params(100, 0.0f);
  EXPECT_TRUE(apply_message(edited(4, std::uint16_t{0xAB00u}), params, nullptr));
}

TEST(Decoder, NamesAVersion1Message) {
  // Version 1 began with "GSUP" and a 72-byte header.
  std::vector<std::uint8_t> m = encode_one("sparse", 100);
  m[2] = 'U';
  m[3] = 'P';
  reseal(m);
  expect_rejected(m, 100, "format version 1, this build reads 2");
}

TEST(Decoder, RejectsCountMismatch) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const auto count = peek<std::uint32_t>(s.message, 28);
    for (const std::uint32_t wrong : {count + 1, count - 1}) {
      if (wrong > s.n) continue;  // count - 1 of the empty message wraps
      std::vector<std::uint8_t> m = s.message;
      poke(m, 28, wrong);
      reseal(m);
      std::vector<float> target(s.n, 0.0f);
      std::string error;
      EXPECT_FALSE(apply_message(m, target, &error));
      EXPECT_EQ(target, std::vector<float>(s.n, 0.0f));
    }
  }
}

TEST(Decoder, RejectsEveryCorruptedByte) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    for (std::size_t i = 0; i < s.message.size(); ++i) {
      std::vector<std::uint8_t> m = s.message;
      m[i] ^= 0x10;
      std::vector<float> target(s.n, 0.0f);
      ASSERT_FALSE(apply_message(m, target, nullptr)) << "byte " << i;
      ASSERT_EQ(target, std::vector<float>(s.n, 0.0f));
    }
    std::vector<std::uint8_t> m = s.message;
    m.back() ^= 0x01;
    expect_rejected(m, s.n, "checksum");
  }
}

TEST(Decoder, RejectsSparseIndexProblems) {
  const std::vector<std::uint8_t> good = encode_one("sparse", 100);
  const std::size_t last = good.size() - 4;
  auto with_last = [&](std::int32_t v) {
    std::vector<std::uint8_t> m = good;
    poke(m, last, v);
    reseal(m);
    return m;
  };
  expect_rejected(with_last(101), 100, "outside");
  expect_rejected(with_last(-101), 100, "outside");
  expect_rejected(with_last(0), 100, "outside");
  expect_rejected(with_last(std::numeric_limits<std::int32_t>::min()), 100, "outside");
  expect_rejected(with_last(std::numeric_limits<std::int32_t>::max()), 100, "outside");
  expect_rejected(with_last(92), 100, "increasing");  // the entry before is 92
  expect_rejected(with_last(-50), 100, "increasing");
}

TEST(Decoder, RejectsBitmapProblems) {
  const std::vector<std::uint8_t> good = encode_one("bitmap", 103);
  std::vector<std::uint8_t> m = good;
  m.back() |= 0x40;  // the unused fourth slot of the last byte (103 = 4 * 25 + 3)
  reseal(m);
  expect_rejected(m, 103, "padding");
  m = good;
  m[kHeaderBytes + 1] |= 0x03;  // a half code, but this is not a shake-up
  poke(m, 28, peek<std::uint32_t>(m, 28) + ((good[kHeaderBytes + 1] & 0x03) == 0 ? 1 : 0));
  reseal(m);
  expect_rejected(m, 103, "half-quantum");
  m = good;
  m[kHeaderBytes + 2] ^= 0x04;  // one code more or less than the header says
  reseal(m);
  expect_rejected(m, 103, "non-zero codes");
}

TEST(Decoder, RejectsCompressedProblems) {
  const std::vector<std::uint8_t> good = encode_one("compressed", 1000);
  std::vector<std::uint8_t> m = good;
  m[kHeaderBytes] = 32;  // Rice parameter
  reseal(m);
  expect_rejected(m, 1000, "Rice parameter");
  m = good;
  m.push_back(0);  // a byte after the last entry
  poke(m, 32, peek<std::uint32_t>(m, 32) + 1);
  reseal(m);
  expect_rejected(m, 1000, "after its last entry");
  m = good;
  poke(m, 28, peek<std::uint32_t>(m, 28) + 1);  // one entry more than the stream holds
  reseal(m);
  expect_rejected(m, 1000, "compressed");
  // A stream for 2000 parameters relabelled as 1000: its last indices lie beyond.
  m = encode_one("compressed", 2000);
  poke(m, 24, std::uint32_t{1000});
  reseal(m);
  std::vector<float> target(1000, 0.0f);
  std::string error;
  EXPECT_FALSE(apply_message(m, target, &error));
  EXPECT_TRUE(error.find("outside") != std::string::npos ||
              error.find("jumps past") != std::string::npos)
      << error;
  EXPECT_EQ(target, std::vector<float>(1000, 0.0f));
}

TEST(Decoder, RejectsCompressedPadding) {
  // Find a stream whose last byte has free bits, then set the highest one.
  for (std::size_t n = 1000; n < 1100; ++n) {
    std::vector<std::uint8_t> m = encode_one("compressed", n);
    const unsigned k = m[kHeaderBytes];
    std::vector<std::int32_t> indices;
    const std::span<const std::uint8_t> payload(m.data() + kHeaderBytes, m.size() - kHeaderBytes);
    ASSERT_TRUE(
        kernels::cpu::rice_decode(payload, peek<std::uint32_t>(m, 28), n, indices, nullptr));
    std::uint64_t bits = 0, previous = 0;
    for (const std::int32_t v : indices) {
      const std::uint64_t index = static_cast<std::uint64_t>(std::abs(v));
      bits += ((index - previous - 1) >> k) + k + 2;
      previous = index;
    }
    if (bits % 8 == 0) continue;
    m.back() |= 0x80;
    reseal(m);
    expect_rejected(m, n, "padding");
    return;
  }
  FAIL() << "no sample with free padding bits";
}

}  // namespace
}  // namespace gradshare::codec
