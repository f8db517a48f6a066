// epoch_plan_test.cpp: shuffles, minibatches and partitions of an epoch; the minibatch gather.
#include "data/epoch_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "data/dataset.h"

namespace gradshare::data {
namespace {

std::vector<std::uint32_t> flatten(const EpochPlan& plan) {
  std::vector<std::uint32_t> order;
  for (std::size_t b = 0; b < plan.batch_count(); ++b) {
    const auto batch = plan.batch_indices(b);
    order.insert(order.end(), batch.begin(), batch.end());
  }
  return order;
}

TEST(EpochPlan, DeterministicForSeedAndEpoch) {
  EXPECT_EQ(flatten(EpochPlan(1000, 32, 4, 7, 3, true)),
            flatten(EpochPlan(1000, 32, 4, 7, 3, true)));
  EXPECT_NE(flatten(EpochPlan(1000, 32, 4, 7, 3, true)),
            flatten(EpochPlan(1000, 32, 4, 7, 4, true)));
  EXPECT_NE(flatten(EpochPlan(1000, 32, 4, 7, 3, true)),
            flatten(EpochPlan(1000, 32, 4, 8, 3, true)));
}

TEST(EpochPlan, EveryEpochIsAPermutation) {
  for (std::int64_t epoch = 0; epoch < 5; ++epoch) {
    const EpochPlan plan(1001, 64, 3, 42, epoch, true);
    std::vector<int> seen(1001, 0);
    for (std::uint32_t i : flatten(plan)) {
      ASSERT_LT(i, 1001u);
      ++seen[i];
    }
    for (int count : seen) EXPECT_EQ(count, 1);
  }
}

TEST(EpochPlan, ShuffleMovesMostSamples) {
  const std::vector<std::uint32_t> order = flatten(EpochPlan(10000, 100, 1, 1, 0, true));
  std::size_t fixed = 0;
  for (std::size_t i = 0; i < order.size(); ++i) fixed += order[i] == i;
  EXPECT_LT(fixed, 20u);  // a random permutation has about one fixed point
}

TEST(EpochPlan, WithoutShuffleKeepsFileOrder) {
  const std::vector<std::uint32_t> order = flatten(EpochPlan(10, 3, 2, 1, 5, false));
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(EpochPlan, LastBatchKeepsTheRemainder) {
  const EpochPlan plan(10, 4, 2, 1, 0, true);
  ASSERT_EQ(plan.batch_count(), 3u);
  EXPECT_EQ(plan.batch_indices(0).size(), 4u);
  EXPECT_EQ(plan.batch_indices(1).size(), 4u);
  EXPECT_EQ(plan.batch_indices(2).size(), 2u);
  EXPECT_EQ(EpochPlan(12, 4, 2, 1, 0, true).batch_count(), 3u);
  EXPECT_EQ(EpochPlan(0, 4, 2, 1, 0, true).batch_count(), 0u);
  EXPECT_EQ(EpochPlan(0, 4, 2, 1, 0, true).partition_count(), 0u);
}

TEST(EpochPlan, PartitionsAreContiguousAndCoverAllBatches) {
  for (std::size_t per_partition : {1u, 3u, 7u, 50u}) {
    const EpochPlan plan(1000, 32, per_partition, 9, 1, true);  // 32 batches
    ASSERT_EQ(plan.batch_count(), 32u);
    EXPECT_EQ(plan.partition_count(), (32 + per_partition - 1) / per_partition);
    std::size_t next = 0;
    for (std::size_t p = 0; p < plan.partition_count(); ++p) {
      const EpochPlan::Range range = plan.partition(p);
      EXPECT_EQ(range.first_batch, next);
      EXPECT_GT(range.end_batch, range.first_batch);
      EXPECT_LE(range.end_batch - range.first_batch, per_partition);
      next = range.end_batch;
    }
    EXPECT_EQ(next, plan.batch_count());
  }
}

TEST(EpochPlan, OutOfRangeIsAnInternalError) {
  const EpochPlan plan(10, 4, 2, 1, 0, true);
  EXPECT_THROW(plan.batch_indices(3), std::runtime_error);
  EXPECT_THROW(plan.partition(2), std::runtime_error);
}

TEST(GatherBatch, CopiesSamplesAndLabels) {
  Dataset dataset;
  dataset.sample_shape = {1, 1, 3};
  dataset.features = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
  dataset.labels = {5, 6, 7, 8};
  const std::vector<std::uint32_t> indices = {3, 0, 2};
  std::vector<float> x(9);
  std::vector<std::int32_t> y(3);
  gather_batch(dataset, indices, x.data(), y.data());
  EXPECT_EQ(x, (std::vector<float>{30, 31, 32, 0, 1, 2, 20, 21, 22}));
  EXPECT_EQ(y, (std::vector<std::int32_t>{8, 5, 7}));
}

}  // namespace
}  // namespace gradshare::data
