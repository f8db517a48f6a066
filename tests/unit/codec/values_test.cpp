// values_test.cpp: the values encoding (codec/values.h): bfloat16 rounding (nearest, ties to
// even, no overflow to infinity), a payload written from a residual leaves exactly what rounding
// dropped and decodes to the rounded values through apply, accumulate and entry_values;
// malformed payloads are refused and leave the target alone.
#include "codec/values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "codec/decoder.h"
#include "codec/message.h"

namespace gradshare::codec {
namespace {

constexpr std::size_t kN = 1000;

std::vector<std::uint8_t> seal(std::vector<std::uint8_t> message, std::size_t entries) {
  MessageHeader header;
  header.encoding = Encoding::kValues;
  header.origin = 2;
  header.seq = 9;
  header.iteration = 4;
  header.tau = 1e-3f;
  header.parameter_count = kN;
  header.entry_count = entries;
  header.payload_bytes = message.size() - kHeaderBytes;
  seal_message(header, message);
  return message;
}

TEST(Bfloat16, RoundsToNearestTiesToEvenAndNeverToInfinity) {
  EXPECT_EQ(to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(from_bfloat16(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even one, 1.
  EXPECT_EQ(from_bfloat16(to_bfloat16(1.0f + 0x1p-8f)), 1.0f);
  // (1 + 2^-7) + 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(from_bfloat16(to_bfloat16(1.0f + 0x1p-7f + 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(from_bfloat16(to_bfloat16(-3.0f)), -3.0f);
  const float largest = std::numeric_limits<float>::max();
  EXPECT_TRUE(std::isfinite(from_bfloat16(to_bfloat16(largest))));
  EXPECT_TRUE(std::isfinite(from_bfloat16(to_bfloat16(-largest))));
}

TEST(ValuesEncoding, WhatIsSentPlusWhatStaysIsTheResidualBitForBit) {
  std::vector<float> residual(kN, 0.0f);
  const std::vector<std::uint32_t> indices{0, 3, 400, 999};
  const float original[] = {1.2345678e-3f, -7.654321e-2f, 3.0e8f, -1.0f};
  for (std::size_t e = 0; e < indices.size(); ++e) residual[indices[e]] = original[e];
  std::vector<std::uint8_t> message;
  write_values_payload(residual, indices, message);
  message = seal(message, indices.size());
  EXPECT_LE(message.size() - kHeaderBytes, values_payload_bound(indices.size(), kN));

  ParsedMessage parsed;
  std::string error;
  ASSERT_TRUE(parse_message(message, kN, parsed, &error)) << error;
  std::vector<float> accumulator(kN, 0.0f), parameters(kN, 1.0f);
  ASSERT_TRUE(accumulate_parsed(parsed, accumulator, &error)) << error;
  ASSERT_TRUE(apply_parsed(parsed, parameters, &error)) << error;
  for (std::size_t e = 0; e < indices.size(); ++e) {
    const std::uint32_t i = indices[e];
    EXPECT_EQ(accumulator[i], from_bfloat16(to_bfloat16(original[e]))) << i;
    EXPECT_EQ(accumulator[i] + residual[i], original[e]) << "nothing lost at " << i;
    EXPECT_LE(std::fabs(residual[i]), std::fabs(original[e]) * 0x1p-9f) << i;
    EXPECT_EQ(parameters[i], 1.0f - accumulator[i]) << i;
  }
  std::size_t touched = 0;
  for (std::size_t i = 0; i < kN; ++i) touched += accumulator[i] != 0.0f;
  EXPECT_EQ(touched, indices.size());
  std::vector<std::uint32_t> listed;
  std::vector<float> listed_values;
  ASSERT_TRUE(entry_values(parsed, listed, listed_values, &error)) << error;
  EXPECT_EQ(listed, indices);
  ASSERT_EQ(listed_values.size(), listed.size());
  for (std::size_t e = 0; e < listed.size(); ++e)
    EXPECT_EQ(listed_values[e], accumulator[listed[e]]) << listed[e];
  // The decoded entries (what the GPU twin uploads as exact records).
  std::vector<ValueEntry> entries;
  ASSERT_TRUE(decode_values(parsed.bytes.subspan(kHeaderBytes), indices.size(), kN, entries,
                            &error))
      << error;
  ASSERT_EQ(entries.size(), indices.size());
  for (std::size_t e = 0; e < indices.size(); ++e) {
    EXPECT_EQ(entries[e].index, indices[e]);
    EXPECT_EQ(entries[e].value, accumulator[indices[e]]);
  }
}

TEST(ValuesEncoding, TheLimitHoldsWhateverTheIndices) {
  for (const std::size_t bytes : {std::size_t{5}, std::size_t{27}, std::size_t{1000}}) {
    const std::size_t count = values_entries_within(bytes, kN);
    EXPECT_LE(values_payload_bound(count, kN), bytes);
    EXPECT_GT(values_payload_bound(count + 1, kN), bytes);
    // The widest gaps cost most: spread the entries as far apart as they go.
    std::vector<float> residual(kN, 0.5f);
    std::vector<std::uint32_t> indices;
    for (std::size_t e = 0; e < count; ++e)
      indices.push_back(static_cast<std::uint32_t>(e * (kN / std::max<std::size_t>(count, 1))));
    std::vector<std::uint8_t> message;
    write_values_payload(residual, indices, message);
    EXPECT_LE(message.size() - kHeaderBytes, bytes);
  }
}

TEST(ValuesEncoding, MalformedPayloadsAreRefusedAndChangeNothing) {
  std::vector<float> residual(kN, 0.0f);
  residual[5] = 0.25f;
  residual[7] = -0.5f;
  const std::vector<std::uint32_t> indices{5, 7};
  std::vector<std::uint8_t> good;
  write_values_payload(residual, indices, good);
  const auto with_magnitude = [&](std::uint16_t bits) {
    auto message = good;
    std::memcpy(message.data() + kHeaderBytes + 2, &bits, 2);
    return seal(message, 2);
  };
  // The Rice stream loses its last byte.
  const std::vector<std::uint8_t> truncated(good.begin(), good.begin() + (good.size() - 1));
  const std::vector<std::vector<std::uint8_t>> bad{
      with_magnitude(0x8000 | 0x3F80),  // a sign bit in the magnitude
      with_magnitude(0),                // zero: no entry
      with_magnitude(0x7F80),           // infinity
      with_magnitude(0x7FC0),           // NaN
      seal(truncated, 2),
      seal(good, 3),                    // more entries than the stream codes
  };
  for (const auto& message : bad) {
    std::vector<float> parameters(kN, 1.0f);
    std::string error;
    EXPECT_FALSE(apply_message(message, parameters, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(parameters, std::vector<float>(kN, 1.0f));
  }
  std::vector<float> parameters(kN, 1.0f);
  std::string error;
  EXPECT_TRUE(apply_message(seal(good, 2), parameters, &error)) << error;
}

TEST(ValuesEncoding, TheWriterRefusesWhatCannotBeAnEntry) {
  std::vector<float> residual(kN, 1.0f);
  residual[3] = 0.0f;
  residual[4] = std::numeric_limits<float>::infinity();
  std::vector<std::uint8_t> out;
  EXPECT_ANY_THROW(write_values_payload(residual, std::vector<std::uint32_t>{3}, out));
  EXPECT_ANY_THROW(write_values_payload(residual, std::vector<std::uint32_t>{4}, out));
  EXPECT_ANY_THROW(write_values_payload(residual, std::vector<std::uint32_t>{2, 2}, out));
  EXPECT_ANY_THROW(write_values_payload(residual, std::vector<std::uint32_t>{kN}, out));
}

}  // namespace
}  // namespace gradshare::codec
