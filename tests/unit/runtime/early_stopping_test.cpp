// Early stopping's verdicts: improvements by more than min_delta, patience counted in epochs
// since the best, loss watched downwards, no stop at the last epoch, resumed counting.
#include "runtime/early_stopping.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gradshare::runtime {
namespace {

config::EarlyStoppingConfig watching(const std::string& metric, std::int64_t patience,
                                     double min_delta) {
  config::EarlyStoppingConfig config;
  config.metric = metric;
  config.patience = patience;
  config.min_delta = min_delta;
  return config;
}

TEST(EarlyStopping, OffByDefault) {
  EXPECT_FALSE(EarlyStopping(config::EarlyStoppingConfig{}, 10).enabled());
}

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  EarlyStopping stopping(watching("accuracy", 2, 0.0), 10);
  EXPECT_TRUE(stopping.observe(1, 0.80).improved);
  EXPECT_TRUE(stopping.observe(2, 0.85).improved);
  const auto third = stopping.observe(3, 0.84);
  EXPECT_FALSE(third.improved);
  EXPECT_FALSE(third.stop);
  const auto fourth = stopping.observe(4, 0.85);  // equal is not better
  EXPECT_FALSE(fourth.improved);
  EXPECT_TRUE(fourth.stop);
  EXPECT_EQ(stopping.best_epoch(), 2);
  EXPECT_DOUBLE_EQ(stopping.best_value(), 0.85);
}

TEST(EarlyStopping, SmallGainsBelowMinDeltaDoNotCount) {
  EarlyStopping stopping(watching("accuracy", 2, 0.01), 10);
  stopping.observe(1, 0.80);
  EXPECT_FALSE(stopping.observe(2, 0.805).improved);
  EXPECT_TRUE(stopping.observe(3, 0.809).stop);
  EXPECT_EQ(stopping.best_epoch(), 1);
}

TEST(EarlyStopping, LossImprovesDownwards) {
  EarlyStopping stopping(watching("loss", 1, 0.0), 10);
  EXPECT_TRUE(stopping.observe(1, 0.50).improved);
  EXPECT_TRUE(stopping.observe(2, 0.40).improved);
  EXPECT_TRUE(stopping.observe(3, 0.45).stop);
}

TEST(EarlyStopping, NeverStopsAtTheLastEpoch) {
  EarlyStopping stopping(watching("accuracy", 1, 0.0), 3);
  stopping.observe(1, 0.9);
  EXPECT_TRUE(stopping.observe(2, 0.8).stop);  // epoch 2 of 3
  EarlyStopping at_end(watching("accuracy", 2, 0.0), 3);
  at_end.observe(1, 0.9);
  EXPECT_FALSE(at_end.observe(2, 0.8).stop);
  EXPECT_FALSE(at_end.observe(3, 0.8).stop);  // the last epoch: nothing left to skip
}

TEST(EarlyStopping, NonFiniteFiguresNeverBecomeTheBest) {
  EarlyStopping stopping(watching("loss", 2, 0.0), 10);
  EXPECT_FALSE(stopping.observe(1, std::nan("")).improved);
  EXPECT_FALSE(stopping.best_epoch().has_value());
  EXPECT_TRUE(stopping.observe(2, INFINITY).stop);
}

TEST(EarlyStopping, ResumedRunCountsFromTheRestoredBest) {
  EarlyStopping stopping(watching("accuracy", 3, 0.0), 10);
  stopping.restore(4, 0.87);
  EXPECT_FALSE(stopping.observe(6, 0.86).stop);
  EXPECT_TRUE(stopping.observe(7, 0.86).stop);
  EXPECT_EQ(stopping.best_epoch(), 4);
}

}  // namespace
}  // namespace gradshare::runtime
