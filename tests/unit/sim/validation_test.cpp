// validation_test.cpp: a run's event simulation lasts long enough that the links' token buckets
// are empty when its timed steps begin (steps_past_burst).
#include "sim/validation.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gradshare::sim
