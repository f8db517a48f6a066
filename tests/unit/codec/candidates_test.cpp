// candidates_test.cpp: what the aggregating relay needs of the codec: every entry's index from a
// parsed message (each format), and an encode step over candidate elements only that, given
// every element that can fire, sends what the full pass sends (capped or not) and leaves the
// rest of the residual alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "codec/message.h"
#include "codec/values.h"
#include "codec_test_util.h"
#include "core/rng.h"

namespace gradshare::codec {
namespace {

using testing::decode_dense;
using testing::make_config;

constexpr std::size_t kN = 4096;

// A residual nonzero at about `density` of the elements, and those elements (ascending).
std::vector<float> sparse_update(double density, std::uint64_t seed, std::vector<std::uint32_t>& nonzero) {
  core::Rng rng(seed);
  std::vector<float> u(kN, 0.0f);
  nonzero.clear();
  for (std::size_t i = 0; i < kN; ++i)
    if (rng.uniform() < density) {
      u[i] = rng.uniform(-3e-4f, 3e-4f);
      nonzero.push_back(static_cast<std::uint32_t>(i));
    }
  return u;
}

std::size_t parsed_entries(const std::vector<std::uint8_t>& message) {
  ParsedMessage parsed;
  std::string error;
  EXPECT_TRUE(parse_message(message, kN, parsed, &error)) << error;
  return static_cast<std::size_t>(parsed.header.entry_count);
}

TEST(EntryValues, ListsEveryEntryOfEachFormatWithTheValueAccumulateAdds) {
  for (const char* format : {"sparse", "compressed", "bitmap", "shake-up"}) {
    const bool shake_up = std::string(format) == "shake-up";
    auto config = make_config(shake_up ? "bitmap" : format);
    config.shake_up_every_steps = shake_up ? 1 : 0;  // every step: half quanta as well
    Encoder encoder(config, kN);
    std::vector<std::uint32_t> nonzero;
    const auto update = sparse_update(0.05, 7, nonzero);
    std::vector<std::uint8_t> message;
    encoder.encode(update, {1, 1, 0, 0, 0}, message);
    if (shake_up) {
      const auto dense = decode_dense(message, kN);
      EXPECT_TRUE(std::any_of(dense.begin(), dense.end(), [](float v) {
        return std::fabs(v) == 1e-4f * 0.5f;
      })) << "a half quantum";
    }
    ParsedMessage parsed;
    std::string error;
    ASSERT_TRUE(parse_message(message, kN, parsed, &error)) << error;
    std::vector<std::uint32_t> indices;
    std::vector<float> values;
    ASSERT_TRUE(entry_values(parsed, indices, values, &error)) << error;
    const auto dense = decode_dense(message, kN);
    std::vector<std::uint32_t> expected;
    std::vector<float> expected_values;
    for (std::size_t i = 0; i < kN; ++i)
      if (dense[i] != 0.0f) {
        expected.push_back(static_cast<std::uint32_t>(i));
        expected_values.push_back(dense[i]);
      }
    EXPECT_EQ(indices, expected) << format;
    EXPECT_EQ(values, expected_values) << format;
    EXPECT_FALSE(indices.empty()) << format;
  }
}

TEST(EncodeCandidates, GivenEveryElementThatCanFireItSendsWhatTheFullPassSends) {
  for (const double cap : {0.0, 0.002}) {  // uncapped, and a cap most steps hit
    auto config = make_config("auto");
    config.max_message_sparsity = cap;
    config.min_quanta = 0;
    Encoder full(config, kN), candidates(config, kN);
    int capped = 0;
    for (std::uint64_t step = 1; step <= 20; ++step) {
      std::vector<std::uint32_t> nonzero;
      const auto update = sparse_update(0.02, step, nonzero);
      // The relay adds contributions to the residual itself, then encodes the changed elements.
      full.accumulate(update);
      candidates.accumulate(update);
      // Every element that can fire at this tau, and a few that cannot.
      std::vector<std::uint32_t> changed;
      for (std::size_t i = 0; i < kN; ++i)
        if (std::fabs(full.residual()[i]) >= full.threshold() || i % 97 == 0)
          changed.push_back(static_cast<std::uint32_t>(i));
      ASSERT_LE(changed.size(), kN / 8);
      std::vector<std::uint8_t> a, b;
      const std::vector<float> zeros(kN, 0.0f);
      const auto sa = full.encode(zeros, {1, step, 0, 0, 0}, a);
      const auto sb = candidates.encode_candidates(changed, {1, step, 0, 0, 0}, b);
      ASSERT_EQ(a, b) << "cap " << cap << " step " << step;
      EXPECT_EQ(sa.capped, sb.capped);
      capped += sb.capped ? 1 : 0;
      EXPECT_EQ(full.threshold(), candidates.threshold());
      for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(full.residual()[i], candidates.residual()[i]);
    }
    if (cap > 0) {
      EXPECT_GT(capped, 0) << "the cap must be exercised";
    }
  }
}

TEST(EncodeCandidates, CalibratesTheFirstTauLikeTheFullPass) {
  auto config = make_config("auto");
  config.initial_threshold = 0.0;  // calibrate at the first step
  config.min_quanta = 0;
  Encoder full(config, kN), candidates(config, kN);
  std::vector<std::uint32_t> nonzero;
  const auto update = sparse_update(0.05, 3, nonzero);
  full.accumulate(update);
  candidates.accumulate(update);
  std::vector<std::uint8_t> a, b;
  const std::vector<float> zeros(kN, 0.0f);
  full.encode(zeros, {1, 1, 0, 0, 0}, a);
  candidates.encode_candidates(nonzero, {1, 1, 0, 0, 0}, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(full.threshold(), candidates.threshold());
  EXPECT_GT(parsed_entries(b), 0u);
}

TEST(EncodeCandidates, AnElementNotAmongTheCandidatesWaits) {
  auto config = make_config("auto", "fixed");
  Encoder encoder(config, kN);
  std::vector<float> update(kN, 0.0f);
  update[10] = 1.0f;   // fires if tested
  update[20] = -1.0f;  // a candidate
  encoder.accumulate(update);
  std::vector<std::uint8_t> message;
  const std::vector<std::uint32_t> candidates{20};
  const auto stats = encoder.encode_candidates(candidates, {1, 1, 0, 0, 0}, message);
  EXPECT_EQ(stats.entries, 1u);
  const auto dense = decode_dense(message, kN);
  EXPECT_LT(dense[20], 0.0f);
  EXPECT_EQ(dense[10], 0.0f);
  EXPECT_FLOAT_EQ(encoder.residual()[10], 1.0f) << "untested: it waits in the residual";
}

// carry_values(): the same elements fire as with quanta (same tau, same cap), each leaving with
// its whole residual but bfloat16's rounding, which stays; what did not fire stays as it was;
// messages keep within the limit.
TEST(EncodeCandidates, CarryingValuesSelectsAsQuantaDoAndSendsEachSelectedElementWhole) {
  auto config = make_config("auto");
  config.max_message_sparsity = 0.002;  // a cap some steps hit
  config.min_quanta = 0;
  Encoder quanta(config, kN), values(config, kN);
  values.carry_values();
  const std::size_t kLimit = kHeaderBytes + values_payload_bound(6, kN);
  values.limit_message_bytes(kLimit);
  quanta.limit_message_bytes(kHeaderBytes + 4 * 6);
  EXPECT_EQ(values.max_message_bytes(), kLimit);
  int capped = 0;
  for (std::uint64_t step = 1; step <= 20; ++step) {
    std::vector<std::uint32_t> nonzero;
    const auto update = sparse_update(0.02, step, nonzero);
    quanta.accumulate(update);
    values.accumulate(update);
    const std::vector<float> before(values.residual().begin(), values.residual().end());
    std::vector<std::uint32_t> every(kN);
    for (std::size_t i = 0; i < kN; ++i) every[i] = static_cast<std::uint32_t>(i);
    std::vector<std::uint8_t> q, v;
    const auto sq = quanta.encode_candidates(every, {1, step, 0, 0, 0}, q);
    const auto sv = values.encode_candidates(every, {1, step, 0, 0, 0}, v);
    ASSERT_LE(v.size(), kLimit);
    ParsedMessage parsed;
    std::string error;
    ASSERT_TRUE(parse_message(v, kN, parsed, &error)) << error;
    EXPECT_EQ(parsed.header.encoding, Encoding::kValues);
    EXPECT_EQ(sv.entries, sq.entries) << "step " << step;
    EXPECT_EQ(sv.capped, sq.capped);
    capped += sv.capped ? 1 : 0;
    const auto fired_q = decode_dense(q, kN), fired_v = decode_dense(v, kN);
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(fired_q[i] != 0.0f, fired_v[i] != 0.0f) << "element " << i << " step " << step;
      if (fired_v[i] != 0.0f) {
        ASSERT_EQ(fired_v[i], from_bfloat16(to_bfloat16(before[i]))) << "sent whole, rounded";
        ASSERT_EQ(fired_v[i] + values.residual()[i], before[i]) << "the rounding stays";
        ASSERT_LE(std::fabs(values.residual()[i]), std::fabs(before[i]) * 0x1p-8f);
      } else {
        ASSERT_EQ(values.residual()[i], before[i]) << "what did not fire stays";
      }
    }
    // Same selection, so the same next tau.
    EXPECT_EQ(values.threshold(), quanta.threshold());
    // The two residuals alike for the next step (the quanta encoder kept remainders below tau).
    for (std::size_t i = 0; i < kN; ++i) quanta.residual()[i] = values.residual()[i];
  }
  EXPECT_GT(capped, 0) << "the cap must be exercised";
}

}  // namespace
}  // namespace gradshare::codec
