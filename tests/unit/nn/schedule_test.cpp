// schedule_test.cpp: each learning-rate schedule at chosen steps, and the linear warm-up.
#include "nn/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"

namespace gradshare::nn {
namespace {

config::OptimizerConfig schedule(const char* name, double lr) {
  config::OptimizerConfig c;
  c.schedule = name;
  c.learning_rate = lr;
  return c;
}

TEST(Schedule, Constant) {
  const LearningRateSchedule s(schedule("constant", 0.01), 100, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 0.01);
  EXPECT_DOUBLE_EQ(s.at(99), 0.01);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.01);
}

TEST(Schedule, StepHalvesEveryTwoEpochs) {
  config::OptimizerConfig c = schedule("step", 0.1);
  c.decay_rate = 0.5;
  c.decay_epochs = 2;
  const LearningRateSchedule s(c, 100, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(19), 0.1);
  EXPECT_DOUBLE_EQ(s.at(20), 0.05);
  EXPECT_DOUBLE_EQ(s.at(45), 0.025);
  c.decay_epochs = 0.5;  // fractional: every 5 steps
  EXPECT_DOUBLE_EQ(LearningRateSchedule(c, 100, 10).at(12), 0.025);
  c.decay_epochs = 0;
  EXPECT_THROW(LearningRateSchedule(c, 100, 10), core::UserError);
}

TEST(Schedule, ExponentialPerEpoch) {
  config::OptimizerConfig c = schedule("exponential", 0.1);
  c.decay_rate = 0.9;
  const LearningRateSchedule s(c, 100, 10);
  EXPECT_DOUBLE_EQ(s.at(9), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10), 0.09);
  EXPECT_NEAR(s.at(25), 0.081, 1e-15);
}

TEST(Schedule, CosineToTheMinimum) {
  config::OptimizerConfig c = schedule("cosine", 1.0);
  c.min_learning_rate = 0.1;
  const LearningRateSchedule s(c, 100, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_NEAR(s.at(50), 0.55, 1e-12);
  EXPECT_NEAR(s.at(25), 0.1 + 0.9 * 0.5 * (1 + std::sqrt(0.5)), 1e-12);
  EXPECT_NEAR(s.at(100), 0.1, 1e-12);
  EXPECT_NEAR(s.at(500), 0.1, 1e-12);
}

TEST(Schedule, LinearWarmupThenCosine) {
  config::OptimizerConfig c = schedule("cosine", 1.0);
  c.warmup_steps = 10;
  const LearningRateSchedule s(c, 110, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.5, 1e-12);  // half way through the cosine part
  EXPECT_NEAR(s.at(110), 0.0, 1e-12);
}

TEST(Schedule, WarmupAppliesToConstant) {
  config::OptimizerConfig c = schedule("constant", 0.2);
  c.warmup_steps = 4;
  const LearningRateSchedule s(c, 100, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 0.05);
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);
  EXPECT_DOUBLE_EQ(s.at(3), 0.2);
  EXPECT_DOUBLE_EQ(s.at(50), 0.2);
}

TEST(Schedule, UnknownName) {
  EXPECT_THROW(LearningRateSchedule(schedule("linear", 0.1), 10, 1), core::UserError);
}

}  // namespace
}  // namespace gradshare::nn
