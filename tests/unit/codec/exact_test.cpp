// exact_test.cpp: the exact encoding (codec/exact.h): values round-trip bit for bit through
// apply, accumulate and entry_values; malformed payloads (indices out of order or range, a
// non-finite or zero value, a wrong length) are refused and leave the target alone.
#include "codec/exact.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "codec/decoder.h"

namespace gradshare::codec {
namespace {

constexpr std::size_t kN = 100;

std::vector<float> values() {
  std::vector<float> v(kN);
  for (std::size_t i = 0; i < kN; ++i) v[i] = 0.001f * static_cast<float>(i) - 0.03f;
  return v;
}

std::vector<std::uint8_t> exact(const std::vector<std::uint32_t>& indices) {
  std::vector<std::uint8_t> out;
  encode_exact(values(), indices, {7, 3, 11, 1, 0}, out);
  return out;
}

// Rewrites the record `e` of a message and seals it again (a well-formed header, a bad payload).
std::vector<std::uint8_t> with_record(std::vector<std::uint8_t> message, std::size_t e,
                                      std::uint32_t index, float value) {
  std::memcpy(message.data() + kHeaderBytes + kExactEntryBytes * e, &index, 4);
  std::memcpy(message.data() + kHeaderBytes + kExactEntryBytes * e + 4, &value, 4);
  MessageHeader header;
  header.encoding = Encoding::kExact;
  header.origin = 7;
  header.seq = 3;
  header.iteration = 11;
  header.epoch = 1;
  header.tau = 1.0f;
  header.parameter_count = kN;
  header.entry_count = (message.size() - kHeaderBytes) / kExactEntryBytes;
  header.payload_bytes = message.size() - kHeaderBytes;
  seal_message(header, message);
  return message;
}

TEST(ExactEncoding, ValuesRoundTripBitForBit) {
  const std::vector<std::uint32_t> indices{0, 5, 17, 99};
  const auto message = exact(indices);
  EXPECT_EQ(message.size(), kHeaderBytes + 4 * kExactEntryBytes);
  ParsedMessage parsed;
  std::string error;
  ASSERT_TRUE(parse_message(message, kN, parsed, &error)) << error;
  EXPECT_EQ(parsed.header.encoding, Encoding::kExact);
  EXPECT_EQ(parsed.header.origin, 7u);
  EXPECT_EQ(parsed.header.seq, 3u);
  std::vector<float> accumulator(kN, 0.0f), parameters(kN, 1.0f);
  ASSERT_TRUE(accumulate_parsed(parsed, accumulator, &error)) << error;
  ASSERT_TRUE(apply_parsed(parsed, parameters, &error)) << error;
  const auto v = values();
  for (std::size_t i = 0; i < kN; ++i) {
    const bool listed = i == 0 || i == 5 || i == 17 || i == 99;
    EXPECT_EQ(accumulator[i], listed ? v[i] : 0.0f) << i;
    EXPECT_EQ(parameters[i], listed ? 1.0f - v[i] : 1.0f) << i;
  }
  std::vector<std::uint32_t> listed;
  std::vector<float> listed_values;
  ASSERT_TRUE(entry_values(parsed, listed, listed_values, &error)) << error;
  EXPECT_EQ(listed, indices);
  ASSERT_EQ(listed_values.size(), listed.size());
  for (std::size_t e = 0; e < listed.size(); ++e)
    EXPECT_EQ(listed_values[e], accumulator[listed[e]]) << listed[e];
}

TEST(ExactEncoding, AnEmptyMessageIsWellFormed) {
  const auto message = exact({});
  std::vector<float> parameters(kN, 1.0f);
  std::string error;
  EXPECT_TRUE(apply_message(message, parameters, &error)) << error;
  EXPECT_EQ(parameters, std::vector<float>(kN, 1.0f));
}

TEST(ExactEncoding, MalformedPayloadsAreRefusedAndChangeNothing) {
  const auto good = exact({2, 4, 6});
  const std::vector<std::vector<std::uint8_t>> bad{
      with_record(good, 1, 2, 0.5f),                                        // not ascending
      with_record(good, 2, kN, 0.5f),                                       // beyond n
      with_record(good, 0, 2, std::numeric_limits<float>::quiet_NaN()),    // not finite
      with_record(good, 0, 2, 0.0f),                                       // no entry
      with_record(good, 0, 2, std::numeric_limits<float>::infinity()),
  };
  for (const auto& message : bad) {
    std::vector<float> parameters(kN, 1.0f);
    std::string error;
    EXPECT_FALSE(apply_message(message, parameters, &error));
    EXPECT_NE(error.find("exact entry"), std::string::npos) << error;
    EXPECT_EQ(parameters, std::vector<float>(kN, 1.0f));
  }
  // A payload that is not a whole number of records: the header check refuses it.
  auto cut = good;
  cut.pop_back();
  std::vector<float> parameters(kN, 1.0f);
  std::string error;
  EXPECT_FALSE(apply_message(cut, parameters, &error));
}

TEST(ExactEncoding, TheEncoderRefusesIndicesOutOfOrder) {
  std::vector<std::uint8_t> out;
  EXPECT_ANY_THROW(encode_exact(values(), std::vector<std::uint32_t>{3, 3}, {}, out));
  EXPECT_ANY_THROW(encode_exact(values(), std::vector<std::uint32_t>{kN}, {}, out));
}

TEST(ExactEncoding, PiecesCarryEveryNonzeroValueOnceWithinTheLimitInSeqOrder) {
  auto v = values();
  v[30] = 0.0f;  // not carried
  const std::size_t limit = kHeaderBytes + 7 * kExactEntryBytes;
  std::vector<std::vector<std::uint8_t>> out(1);  // appended after what is there
  const auto carried = encode_exact_pieces(v, {4, 20, 9, 0, 1u << 16}, 1u << 17, limit, out);
  ASSERT_EQ(carried.size(), kN - 1);
  EXPECT_EQ(out.size(), 1 + (kN - 1 + 6) / 7);
  std::vector<float> parameters(kN, 0.0f);
  for (std::size_t m = 1; m < out.size(); ++m) {
    EXPECT_LE(out[m].size(), limit);
    ParsedMessage parsed;
    std::string error;
    ASSERT_TRUE(parse_message(out[m], kN, parsed, &error)) << error;
    EXPECT_EQ(parsed.header.seq, 20 + m - 1);
    EXPECT_EQ(parsed.header.flags, m + 1 == out.size() ? 3u << 16 : 1u << 16);
    ASSERT_TRUE(apply_parsed(parsed, parameters, &error)) << error;
  }
  for (std::size_t i = 0; i < kN; ++i) EXPECT_EQ(parameters[i], -v[i]) << i;
}

TEST(ExactEncoding, PiecesOfAllZeroValuesAreOneEmptyMessage) {
  std::vector<std::vector<std::uint8_t>> out;
  EXPECT_TRUE(encode_exact_pieces(std::vector<float>(kN, 0.0f), {4, 1, 0, 0, 0}, 0,
                                  kHeaderBytes + kExactEntryBytes, out).empty());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].size(), kHeaderBytes);
}

}  // namespace
}  // namespace gradshare::codec
