// threshold_test.cpp: trajectories of the threshold algorithms, alone and driven by an Encoder.
#include "codec/threshold.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "codec/encoder.h"
#include "codec_test_util.h"
#include "core/errors.h"
#include "core/rng.h"

namespace gradshare::codec {
namespace {

using testing::make_config;

constexpr double kDecay = 0.965936;

TEST(AdaptiveThreshold, FollowsDl4jRule) {
  auto config = make_config();
  config.min_sparsity = 1e-4;  // DL4J's band (gradshare's default is 1.75e-4..7e-4)
  config.max_sparsity = 1e-2;
  const auto algorithm = make_threshold_algorithm(config);
  double tau = 1e-4;
  for (int i = 0; i < 20; ++i) tau = algorithm->next(tau, 0.0);  // sparsity below 1e-4
  EXPECT_NEAR(tau, 0.5e-4, 0.5e-4 * 1e-4);                       // halves in 20 steps
  tau = 1e-4;
  for (int i = 0; i < 20; ++i) tau = algorithm->next(tau, 0.5);
  EXPECT_NEAR(tau, 2e-4, 2e-4 * 1e-4);
  EXPECT_EQ(algorithm->next(1e-4, 1e-3), 1e-4);  // inside [1e-4, 1e-2]
  EXPECT_EQ(algorithm->next(1e-4, 1e-4), 1e-4);
  EXPECT_EQ(algorithm->next(1e-4, 1e-2), 1e-4);
  EXPECT_EQ(algorithm->next(1e-4, 0.99e-4), 1e-4 * kDecay);
  EXPECT_EQ(algorithm->next(1e-4, 1.01e-2), 1e-4 / kDecay);
}

TEST(FixedThreshold, NeverMoves) {
  const auto algorithm = make_threshold_algorithm(make_config("auto", "fixed"));
  for (const double sparsity : {0.0, 1e-5, 1e-3, 0.5, 1.0}) {
    EXPECT_EQ(algorithm->next(2e-3, sparsity), 2e-3);
  }
}

TEST(TargetSparsityThreshold, StepsTowardsTheTarget) {
  config::EncodingConfig config = make_config("auto", "target_sparsity");
  config.target_sparsity = 1e-3;
  const auto algorithm = make_threshold_algorithm(config);
  EXPECT_EQ(algorithm->next(1.0, 0.9e-3), kDecay);
  EXPECT_EQ(algorithm->next(1.0, 1.1e-3), 1.0 / kDecay);
  EXPECT_EQ(algorithm->next(1.0, 1e-3), 1.0);
}

// Steps the encoder over zero updates: nothing fires, so adaptive tau shrinks by the decay rate
// per step down to min_threshold.
TEST(AdaptiveThreshold, EncoderTrajectoryWhenNothingFires) {
  config::EncodingConfig config = make_config();
  config.min_threshold = 2e-5;
  Encoder encoder(config, 1000);
  std::vector<std::uint8_t> message;
  const std::vector<float> zero(1000, 0.0f);
  double expected = 1e-4;
  for (int step = 0; step < 60; ++step) {
    const EncodeStats stats = encoder.encode(zero, {}, message);
    EXPECT_NEAR(stats.tau, expected, expected * 1e-5) << step;
    expected = std::max(expected * kDecay, 2e-5);
  }
  EXPECT_EQ(encoder.threshold(), 2e-5f);  // clamped at min_threshold
}

// A bitmap chosen by the auto format counts as sparsity 1/16 (DL4J): with max_sparsity 0.1 the
// real sparsity 1.0 would raise tau, 1/16 leaves it alone. A forced bitmap counts what it sent.
TEST(AdaptiveThreshold, AutoBitmapCountsAsOneSixteenth) {
  config::EncodingConfig config = make_config("auto");
  config.max_sparsity = 0.1;
  config.max_message_sparsity = 1.0;  // no congestion cap: the bitmap goes out whole
  Encoder auto_encoder(config, 1000);
  config.format = "bitmap";
  Encoder bitmap_encoder(config, 1000);
  std::vector<std::uint8_t> message;
  const std::vector<float> all_fire(1000, 1.0f);
  EXPECT_EQ(auto_encoder.encode(all_fire, {}, message).encoding, Encoding::kBitmap);
  EXPECT_EQ(auto_encoder.threshold(), 1e-4f);
  bitmap_encoder.encode(all_fire, {}, message);
  EXPECT_EQ(bitmap_encoder.threshold(), static_cast<float>(static_cast<double>(1e-4f) / kDecay));
}

TEST(AdaptiveThreshold, EncoderGrowsTauUntilSparsityFallsIntoTheBand) {
  const std::size_t n = 20000;
  config::EncodingConfig config = make_config("auto", "adaptive", "clip");
  Encoder encoder(config, n);
  core::Rng rng(21);
  std::vector<std::uint8_t> message;
  std::vector<float> u(n);
  double sparsity = 1.0;
  for (int step = 0; step < 400; ++step) {
    for (float& x : u) x = 1e-3f * rng.normal();  // far above the initial tau of 1e-4
    sparsity = encoder.encode(u, {}, message).sparsity;
  }
  EXPECT_GT(encoder.threshold(), 1e-3f);
  EXPECT_LE(sparsity, 2e-2);
  EXPECT_GE(sparsity, 1e-4);
}

TEST(TargetSparsityThreshold, EncoderConvergesToTheTarget) {
  const std::size_t n = 20000;
  config::EncodingConfig config = make_config("auto", "target_sparsity", "clip");
  config.target_sparsity = 1e-2;
  config.initial_threshold = 1e-3;
  Encoder encoder(config, n);
  core::Rng rng(22);
  std::vector<std::uint8_t> message;
  std::vector<float> u(n);
  double late_sum = 0.0;
  for (int step = 0; step < 600; ++step) {
    for (float& x : u) x = 1e-4f * rng.normal();
    const double sparsity = encoder.encode(u, {}, message).sparsity;
    if (step >= 400) late_sum += sparsity;
  }
  const double late_mean = late_sum / 200;
  EXPECT_GT(late_mean, 0.5e-2);
  EXPECT_LT(late_mean, 2e-2);
}

TEST(Threshold, RejectsBadConstants) {
  config::EncodingConfig config = make_config("auto", "target_sparsity");
  config.target_sparsity = 0.0;
  EXPECT_THROW(make_threshold_algorithm(config), core::UserError);
  config = make_config();
  config.decay_rate = 1.0;
  EXPECT_THROW(make_threshold_algorithm(config), core::UserError);
}

}  // namespace
}  // namespace gradshare::codec
