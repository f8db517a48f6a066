// rice_test.cpp: Golomb-Rice coding of index lists: round trips, exact predicted sizes, the
// parameter choice against brute force, the documented size bound, and malformed streams.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/codec_rice.h"

namespace gradshare::kernels::cpu {
namespace {

std::vector<std::int32_t> random_indices(std::size_t n, double density, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<std::int32_t> indices;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng.uniform() < density) {
      const auto one_based = static_cast<std::int32_t>(i + 1);
      indices.push_back(rng.below(2) == 0 ? one_based : -one_based);
    }
  }
  return indices;
}

std::vector<std::uint8_t> encode(const std::vector<std::int32_t>& indices, RiceChoice choice) {
  std::vector<std::uint8_t> payload(choice.payload_bytes, 0xCC);
  rice_encode(indices, choice.k, payload);
  return payload;
}

// Exact payload size for parameter k, computed from the definition.
std::size_t size_for(const std::vector<std::int32_t>& indices, unsigned k) {
  std::uint64_t bits = 0, previous = 0;
  for (const std::int32_t v : indices) {
    const auto index = static_cast<std::uint64_t>(std::abs(static_cast<std::int64_t>(v)));
    bits += ((index - previous - 1) >> k) + k + 2;
    previous = index;
  }
  return 1 + (bits + 7) / 8;
}

TEST(Rice, RoundTripsAtEveryDensity) {
  const std::size_t n = 100000;
  for (const double density : {0.0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 0.9, 1.0}) {
    SCOPED_TRACE(density);
    const std::vector<std::int32_t> indices = random_indices(n, density, 3);
    const RiceChoice choice = rice_choose(indices);
    EXPECT_EQ(choice.payload_bytes, size_for(indices, choice.k));
    const std::vector<std::uint8_t> payload = encode(indices, choice);
    std::vector<std::int32_t> decoded;
    std::string error;
    ASSERT_TRUE(rice_decode(payload, indices.size(), n, decoded, &error)) << error;
    EXPECT_EQ(decoded, indices);
    std::vector<float> target(n, 0.0f);
    rice_apply(payload, indices.size(), target, 1.0f, -1.0f);
    for (const std::int32_t v : indices) EXPECT_EQ(target[std::abs(v) - 1], v > 0 ? 1.0f : -1.0f);
  }
}

TEST(Rice, ChoosesTheBestParameterForRandomSets) {
  for (const double density : {1e-4, 1e-3, 3e-3, 1e-2, 0.05, 0.2, 0.6}) {
    const std::vector<std::int32_t> indices = random_indices(200000, density, 4);
    std::size_t best = ~std::size_t{0};
    for (unsigned k = 0; k <= 31; ++k) best = std::min(best, size_for(indices, k));
    EXPECT_EQ(rice_choose(indices).payload_bytes, best) << density;
  }
}

TEST(Rice, CloseToTheEntropyAtTrainingSparsity) {
  const std::vector<std::int32_t> indices = random_indices(1000000, 1e-3, 5);
  const double bits_per_entry = 8.0 * rice_choose(indices).payload_bytes / indices.size();
  // Geometric gaps of mean 1000: log2(1000) + log2(e) = 11.4 bits, plus one sign bit.
  EXPECT_LT(bits_per_entry, 12.4 * 1.03);
}

TEST(Rice, SizeBoundHoldsForAdversarialSets) {
  const std::size_t n = 1 << 20;
  std::vector<std::vector<std::int32_t>> sets;
  sets.push_back({static_cast<std::int32_t>(n)});  // one far index
  std::vector<std::int32_t> cluster_and_far;
  for (std::int32_t i = 1; i <= 1000; ++i) cluster_and_far.push_back(i);
  cluster_and_far.push_back(static_cast<std::int32_t>(n));
  sets.push_back(cluster_and_far);
  std::vector<std::int32_t> all;
  for (std::size_t i = 1; i <= n; ++i) all.push_back(-static_cast<std::int32_t>(i));
  sets.push_back(all);
  for (const auto& indices : sets) {
    const double c = static_cast<double>(indices.size());
    const double bound = 2 + c * (std::log2(static_cast<double>(n) / c) + 4) / 8;
    EXPECT_LE(static_cast<double>(rice_choose(indices).payload_bytes), bound) << c;
    EXPECT_LE(rice_choose(indices).payload_bytes, n / 2 + 2);
  }
}

TEST(Rice, RejectsMalformedStreams) {
  const std::vector<std::int32_t> indices = {3, -10, 11, 500};
  const std::vector<std::uint8_t> good = encode(indices, rice_choose(indices));
  std::string error;
  EXPECT_TRUE(rice_validate(good, 4, 500, &error)) << error;
  EXPECT_FALSE(rice_validate(good, 4, 499, &error));  // last index beyond n
  EXPECT_FALSE(rice_validate({}, 0, 500, &error));    // no parameter byte
  EXPECT_FALSE(rice_validate(good, 5, 500, &error));  // more entries than coded
  EXPECT_FALSE(rice_validate(good, 3, 500, &error));  // trailing entry
  std::vector<std::uint8_t> truncated(good.begin(), good.end() - 1);
  EXPECT_FALSE(rice_validate(truncated, 4, 500, &error));
  std::vector<std::uint8_t> zeros = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // an endless unary run
  EXPECT_FALSE(rice_validate(zeros, 1, 1000000, &error));
  EXPECT_FALSE(rice_validate(zeros, 1, 20, &error));
  EXPECT_NE(error.find("jumps past"), std::string::npos) << error;
  const std::vector<std::uint8_t> empty_ok = {0};
  EXPECT_TRUE(rice_validate(empty_ok, 0, 10, &error)) << error;
}

}  // namespace
}  // namespace gradshare::kernels::cpu
