// residual_test.cpp: residual clipping (schedule, bound, and the accounting of the clipped mass,
// the codec's one deliberate loss) and shake-up messages (half quanta of alternating sign).
#include "codec/residual.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "codec/encoder.h"
#include "codec_test_util.h"
#include "core/rng.h"

namespace gradshare::codec {
namespace {

using testing::decode_dense;
using testing::make_config;

constexpr float kTau = 1e-3f;

// Positive updates averaging 1.5 tau while a sparse step sends at most one tau: the residual
// grows until the clip every 5 steps cuts it to 5 tau. All clipped mass is positive, so
// sum(u) - sum(decoded) - r_final == the reported clipped mass.
TEST(ClipResidual, ClippedMassAccountsForTheLoss) {
  const std::size_t n = 500;
  Encoder encoder(make_config("sparse", "fixed", "clip"), n);
  encoder.set_threshold(kTau);
  core::Rng rng(31);
  std::vector<double> sum_u(n, 0.0), sum_decoded(n, 0.0);
  std::vector<std::uint8_t> message;
  double clipped = 0.0;
  double rounding = 0.0;
  for (int step = 1; step <= 100; ++step) {
    std::vector<float> u(n);
    for (float& x : u) x = kTau * rng.uniform(0.0f, 3.0f);
    const EncodeStats stats = encoder.encode(u, {}, message);
    const std::vector<float> decoded = decode_dense(message, n);
    for (std::size_t i = 0; i < n; ++i) {
      sum_u[i] += u[i];
      sum_decoded[i] += decoded[i];
      rounding += std::ldexp(10.0 * kTau, -23);  // |r| stays below ~8 tau
    }
    if (step % 5 != 0) {
      EXPECT_EQ(stats.clipped_mass, 0.0) << step;
    } else {
      if (step >= 10) {
        EXPECT_GT(stats.clipped_mass, 0.0) << step;
      }
      for (const float r : encoder.residual()) ASSERT_LE(std::fabs(r), 5 * kTau);
    }
    clipped += stats.clipped_mass;
  }
  double lost = 0.0;
  for (std::size_t i = 0; i < n; ++i) lost += sum_u[i] - sum_decoded[i] - encoder.residual()[i];
  EXPECT_GT(clipped, 0.0);
  EXPECT_NEAR(lost, clipped, rounding + 1e-9 * clipped);
}

TEST(ClipResidual, RandomSignsLoseAtMostTheClippedMass) {
  const std::size_t n = 500;
  config::EncodingConfig config = make_config("auto", "fixed", "clip");
  config.clip_every_steps = 3;
  config.clip_multiplier = 2.0;
  Encoder encoder(config, n);
  encoder.set_threshold(kTau);
  core::Rng rng(32);
  std::vector<double> sum_u(n, 0.0), sum_decoded(n, 0.0);
  std::vector<std::uint8_t> message;
  double clipped = 0.0;
  for (int step = 1; step <= 60; ++step) {
    std::vector<float> u(n);
    for (float& x : u) x = 4 * kTau * rng.normal();
    const EncodeStats stats = encoder.encode(u, {}, message);
    const std::vector<float> decoded = decode_dense(message, n);
    for (std::size_t i = 0; i < n; ++i) {
      sum_u[i] += u[i];
      sum_decoded[i] += decoded[i];
    }
    clipped += stats.clipped_mass;
    if (step % 3 == 0) {
      for (const float r : encoder.residual()) ASSERT_LE(std::fabs(r), 2 * kTau);
    }
  }
  double lost = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    lost += std::fabs(sum_u[i] - sum_decoded[i] - encoder.residual()[i]);
  }
  EXPECT_GT(clipped, 0.0);
  EXPECT_LE(lost, clipped * (1 + 1e-6));
}

TEST(ClipResidual, NoneKeepsEverything) {
  Encoder encoder(make_config("auto", "fixed", "none"), 10);
  encoder.residual()[3] = 100.0f;
  std::vector<std::uint8_t> message;
  for (int step = 0; step < 10; ++step) {
    EXPECT_EQ(encoder.encode(std::vector<float>(10, 0.0f), {}, message).clipped_mass, 0.0);
  }
  EXPECT_GT(encoder.residual()[3], 99.0f);  // one quantum sent per step, nothing clipped
}

// Residual bands for tau = 1e-3 and divisor 4 (half threshold 2.5e-4):
//   element 0: 2e-3   full quantum
//   element 1: 5e-4   positive half band
//   element 2: -5e-4  negative half band
//   element 3: 1e-4   below the half threshold
//   element 4: -3e-3  full quantum
TEST(ShakeUp, SendsHalfQuantaOfAlternatingSign) {
  config::EncodingConfig config = make_config("sparse", "fixed", "none");
  config.shake_up_every_steps = 2;
  config.shake_up_divisor = 4.0;
  Encoder encoder(config, 5);
  encoder.set_threshold(kTau);
  const std::vector<float> start = {2e-3f, 5e-4f, -5e-4f, 1e-4f, -3e-3f};
  std::copy(start.begin(), start.end(), encoder.residual().begin());
  const std::vector<float> zero(5, 0.0f);
  std::vector<std::uint8_t> message;

  EncodeStats stats = encoder.encode(zero, {}, message);  // step 1: ordinary, sparse
  EXPECT_FALSE(stats.shake_up);
  EXPECT_EQ(stats.encoding, Encoding::kSparse);
  EXPECT_EQ(stats.entries, 2u);  // elements 0 and 4

  stats = encoder.encode(zero, {}, message);  // step 2: first shake-up, +tau/2
  EXPECT_TRUE(stats.shake_up);
  EXPECT_EQ(stats.encoding, Encoding::kBitmap);
  EXPECT_EQ(stats.half_entries, 1u);
  MessageHeader header;
  ASSERT_TRUE(parse_header(message, 5, header, nullptr));
  EXPECT_EQ(header.flags, kFlagShakeUp);
  std::vector<float> decoded = decode_dense(message, 5);
  EXPECT_EQ(decoded[0], kTau);      // 2e-3 - 1e-3 = 1e-3 is still a full quantum
  EXPECT_EQ(decoded[1], kTau / 2);  // the positive half band
  EXPECT_EQ(decoded[2], 0.0f);      // negative: waits for the next shake-up
  EXPECT_EQ(decoded[3], 0.0f);
  EXPECT_EQ(decoded[4], -kTau);  // -3e-3 + 1e-3 = -2e-3
  EXPECT_FLOAT_EQ(encoder.residual()[1], 0.0f);

  stats = encoder.encode(zero, {}, message);  // step 3: ordinary
  EXPECT_FALSE(stats.shake_up);
  stats = encoder.encode(zero, {}, message);  // step 4: second shake-up, -tau/2
  EXPECT_TRUE(stats.shake_up);
  ASSERT_TRUE(parse_header(message, 5, header, nullptr));
  EXPECT_EQ(header.flags, kFlagShakeUp | kFlagHalfNegative);
  decoded = decode_dense(message, 5);
  EXPECT_EQ(decoded[2], -kTau / 2);
  EXPECT_EQ(decoded[3], 0.0f);
  EXPECT_FLOAT_EQ(encoder.residual()[2], 0.0f);
  EXPECT_EQ(encoder.residual()[3], 1e-4f);
}

TEST(ShakeUp, OffByDefault) {
  Encoder encoder(make_config(), 100);
  std::vector<std::uint8_t> message;
  for (int step = 0; step < 50; ++step) {
    EXPECT_FALSE(encoder.encode(std::vector<float>(100, 3e-5f), {}, message).shake_up);
  }
}

}  // namespace
}  // namespace gradshare::codec
