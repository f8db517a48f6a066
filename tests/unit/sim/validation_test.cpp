// validation_test.cpp: a run's event simulation lasts long enough that the links' token buckets
// are empty when its timed steps begin (steps_past_burst), and encodes at the run's mean
// sparsity band (band_epochs_of_run).
#include "sim/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codec/sparsity_band.h"

namespace gradshare::sim {
namespace {

LinkModel link_at(double bits_per_second, double burst_bytes) {
  LinkModel link;
  link.bits_per_second = bits_per_second;
  link.burst_bytes = burst_bytes;
  return link;
}

TEST(StepsPastBurst, TheUntimedFifthLastsTwoBurstsAtTheRunsPace) {
  const double rate = 10e6;
  const LinkModel link = link_at(rate, cluster_local_burst_bytes(rate));  // 0.21 s at 10 Mbit/s
  const int steps = steps_past_burst(40, link, 3e-3);
  EXPECT_GE(steps / 5 * 3e-3, 2 * link.burst_seconds());
  EXPECT_LE(steps, 40 + static_cast<int>(10 * link.burst_seconds() / 3e-3) + 1);
}

TEST(StepsPastBurst, AWireOrAFastLinkKeepsTheStepsAsked) {
  EXPECT_EQ(steps_past_burst(40, link_at(10e6, 0.0), 3e-3), 40);
  EXPECT_EQ(steps_past_burst(40, link_at(1e9, cluster_local_burst_bytes(1e9)), 3e-3), 40);
  EXPECT_EQ(steps_past_burst(40, link_at(10e6, cluster_local_burst_bytes(10e6)), 0.0), 40);
}

TEST(StepsPastBurst, AtMostFiveThousand) {
  EXPECT_EQ(steps_past_burst(40, link_at(1e5, cluster_local_burst_bytes(1e5)), 1e-4), 5000);
}

TEST(BandEpochsOfRun, TheBandThereIsTheRunsMeanAndAShortRunIsDenser) {
  config::EncodingConfig encoding;  // the defaults: a warm-up of one epoch
  ASSERT_GT(encoding.warmup_epochs, 0.0);
  constexpr std::size_t kParameters = 235146;
  const codec::BandScale band(encoding, kParameters);
  const double two = band_epochs_of_run(encoding, kParameters, 2.0);
  const double fifteen = band_epochs_of_run(encoding, kParameters, 15.0);
  EXPECT_GT(two, 0.0);
  EXPECT_LT(two, fifteen);
  EXPECT_LT(fifteen, encoding.warmup_epochs);
  // The band at that progress is the mean over the run (a sum of many small steps).
  double mean = 0;
  constexpr int kSteps = 20000;
  for (int k = 0; k < kSteps; ++k) mean += band.at(2.0 * (k + 0.5) / kSteps);
  mean /= kSteps;
  EXPECT_NEAR(band.at(two), mean, 1e-3 * mean);
  EXPECT_GT(band.at(two), band.at(fifteen));
}

TEST(BandEpochsOfRun, WithoutAWarmUpTheSteadyBand) {
  config::EncodingConfig encoding;
  encoding.warmup_epochs = 0.0;
  EXPECT_TRUE(std::isinf(band_epochs_of_run(encoding, 235146, 2.0)));
}

}  // namespace
}  // namespace gradshare::sim
