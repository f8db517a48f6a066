// staleness_test.cpp: the staleness measure and bound (StalenessTracker) and the divergence
// guard's triggers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/divergence_guard.h"
#include "train/sharing/staleness.h"

namespace gradshare::train {
namespace {

TEST(StalenessTracker, MeasuresClockDifferences) {
  StalenessTracker tracker(/*ranks=*/4, /*self=*/1, /*bound=*/2);
  tracker.applied(2, 10, false, 13);  // 3 steps stale
  tracker.applied(3, 12, false, 13);  // 1
  tracker.applied(3, 14, false, 13);  // the receiver is behind: 0
  const auto& stats = tracker.stats();
  EXPECT_EQ(stats.count, 3);
  EXPECT_EQ(stats.max, 3);
  EXPECT_DOUBLE_EQ(stats.mean(), 4.0 / 3.0);
  EXPECT_EQ(stats.histogram[0], 1);  // 0
  EXPECT_EQ(stats.histogram[1], 1);  // 1
  EXPECT_EQ(stats.histogram[2], 1);  // 2-3
  EXPECT_EQ(stats.histogram_text(), "0:1 1:1 2-3:1");
}

TEST(StalenessTracker, HistogramBuckets) {
  StalenessStats stats;
  for (const std::int64_t s : {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 1000}) stats.record(s);
  for (std::size_t b = 0; b < StalenessStats::kBuckets; ++b)
    EXPECT_EQ(stats.histogram[b], b < 2 ? 1 : 2) << StalenessStats::bucket_name(b);
}

TEST(StalenessTracker, BlocksOnTheSlowestTrainingPeer) {
  StalenessTracker tracker(4, 1, 2);
  EXPECT_FALSE(tracker.blocking_peer(100));  // peers never heard from do not block
  tracker.applied(2, 10, false, 10);
  tracker.applied(3, 11, false, 10);
  EXPECT_FALSE(tracker.blocking_peer(12));   // 10 >= 12 - 2
  EXPECT_EQ(tracker.blocking_peer(13), 2);   // 10 < 13 - 2
  tracker.applied(2, 11, false, 13);
  EXPECT_FALSE(tracker.blocking_peer(13));
  EXPECT_EQ(tracker.slowest_training_peer(), 11u);
}

TEST(StalenessTracker, IdleAndForgottenPeersDoNotBlock) {
  StalenessTracker tracker(4, 1, 2);
  tracker.applied(2, 5, false, 5);
  tracker.applied(3, 20, false, 20);
  EXPECT_EQ(tracker.blocking_peer(20), 2);
  tracker.applied(2, 6, /*idle=*/true, 20);  // rank 2 has no partition left
  EXPECT_FALSE(tracker.blocking_peer(20));
  EXPECT_EQ(tracker.slowest_training_peer(), 20u);
  tracker.applied(2, 7, false, 30);  // training again: counts again
  EXPECT_EQ(tracker.blocking_peer(30), 2);
  tracker.forget_peers({1, 3});  // a recovery: rank 2 died, rank 3 counts from its next update
  EXPECT_FALSE(tracker.blocking_peer(30));
  EXPECT_FALSE(tracker.slowest_training_peer());
  // The resync applies the dead rank's last updates: it never counts again.
  tracker.applied(2, 8, false, 30);
  EXPECT_FALSE(tracker.blocking_peer(40));
  tracker.applied(3, 21, false, 30);
  EXPECT_EQ(tracker.blocking_peer(40), 3);
}

TEST(StalenessTracker, BoundZeroNeverBlocks) {
  StalenessTracker tracker(3, 1, 0);
  tracker.applied(2, 0, false, 0);
  EXPECT_FALSE(tracker.blocking_peer(1000000));
  tracker.applied(1, 0, false, 5);  // own updates are not measured
  EXPECT_EQ(tracker.stats().count, 1);
}

config::TrainingConfig training(double factor) {
  config::TrainingConfig config;
  config.divergence_factor = factor;
  return config;
}

TEST(DivergenceGuard, NonFiniteLossAtOnce) {
  runtime::DivergenceGuard guard(training(10), 10);
  EXPECT_FALSE(guard.check(1, 2.3));
  const auto reason = guard.check(2, std::numeric_limits<double>::quiet_NaN());
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("step 2 is NaN"), std::string::npos) << *reason;
  EXPECT_TRUE(guard.check(3, std::numeric_limits<double>::infinity()));
}

TEST(DivergenceGuard, ExplodingLoss) {
  runtime::DivergenceGuard guard(training(10), 10);
  std::int64_t step = 0;
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(guard.check(++step, 2.3 - 0.01 * i)) << i;  // to 0.31
  // One hard minibatch is no alarm; a sustained explosion is.
  EXPECT_FALSE(guard.check(++step, 20.0));
  std::optional<std::string> reason;
  for (int i = 0; i < 100 && !reason; ++i) reason = guard.check(++step, 1e4);
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("training.divergence_factor"), std::string::npos) << *reason;
}

// An asynchronous worker's first minibatch may already meet a model the other workers' updates
// blew up: its running minimum starts no higher than the loss of guessing (ln 10 = 2.303 here).
TEST(DivergenceGuard, AnExplosionFromTheFirstStepIsMeasuredAgainstGuessing) {
  runtime::DivergenceGuard guard(training(10), 10);
  std::optional<std::string> reason;
  std::int64_t step = 0;
  while (!reason && step < 100) reason = guard.check(++step, 100.0);
  ASSERT_TRUE(reason);
  EXPECT_EQ(step, 1);  // the first loss is the average: 100, over 10 x 2.303
  EXPECT_NE(reason->find("the loss of guessing"), std::string::npos) << *reason;
  // Below factor x ln(classes) from the start is no alarm (a slow start, not an explosion).
  runtime::DivergenceGuard slow(training(10), 10);
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(slow.check(i + 1, 20.0)) << i;
}

// Near-zero losses (separable data) move by orders of magnitude without anything wrong: the
// minimum is floored at 1 % of ln(classes), 0.023 here; a real explosion still raises the alarm.
TEST(DivergenceGuard, AConvergedLossWigglingIsNoExplosion) {
  runtime::DivergenceGuard guard(training(10), 10);
  std::int64_t step = 0;
  EXPECT_FALSE(guard.check(++step, 3e-5));
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(guard.check(++step, 2e-3)) << i;
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(guard.check(++step, 0.2)) << i;  // < 10 x 0.023
  std::optional<std::string> reason;
  for (int i = 0; i < 100 && !reason; ++i) reason = guard.check(++step, 5.0);
  EXPECT_TRUE(reason);
}

TEST(DivergenceGuard, NoiseAndFactorZero) {
  runtime::DivergenceGuard guard(training(10), 10);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(guard.check(i + 1, i % 2 == 0 ? 0.05 : 0.9));
  runtime::DivergenceGuard finite_only(training(0), 10);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(finite_only.check(i + 1, i < 50 ? 1.0 : 1e9));
  EXPECT_TRUE(finite_only.check(101, std::numeric_limits<double>::infinity()));
}

}  // namespace
}  // namespace gradshare::train
