// checkpoint_time_test.cpp: a run's checkpoints move its predicted time per step from the steady
// one toward the time per step while collecting, by the share of the run they take.
#include "sim/checkpoint_time.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/sim/small_model.h"

namespace gradshare::sim {
namespace {

// A run of 4 workers with 2000 steps each and `collections` of 200 kB per worker.
RunRecords run_with(double collections) {
  RunRecords run;
  for (int rank = 0; rank < 5; ++rank) run.ranks[rank].steps = rank > 0 ? 2000 : 0;
  run.checkpoint_collections = collections;
  run.checkpoint_state_bytes = collections * 4 * 200000;
  return run;
}

TEST(CheckpointTime, ThePredictionLiesBetweenSteadyAndCollectingByTheirShare) {
  const auto config = small_config();
  const ModelSample& sample = small_sample();
  const EventSetup setup{topology::build_plain(5), Placement::one_per_node(5), LinkModel{10e6}, 0,
                         30};
  const double steady = 1e-3;
  const auto none = time_with_checkpoints(config, sample, setup, run_with(0), steady);
  EXPECT_EQ(none.collections, 0.0);
  EXPECT_EQ(none.predicted, steady);

  const auto some = time_with_checkpoints(config, sample, setup, run_with(2), steady);
  EXPECT_EQ(some.state_bytes, 200000);
  // Four states of 200 kB over the master's 10 Mbit/s inbound link: 0.64 s at least.
  EXPECT_GE(some.collection_seconds, 0.64);
  ASSERT_GT(some.step_seconds, 0.0);
  EXPECT_GE(some.predicted, std::min(steady, some.step_seconds));
  EXPECT_LE(some.predicted, std::max(steady, some.step_seconds));
  const double share = 2 * some.collection_seconds / (2000 * some.step_seconds);
  EXPECT_NEAR(some.predicted, share * some.step_seconds + (1 - share) * steady, 1e-12);

  // Collections back to back all run long: every step at the collecting time per step.
  const auto always = time_with_checkpoints(config, sample, setup, run_with(1e6), steady);
  EXPECT_DOUBLE_EQ(always.predicted, always.step_seconds);
}

}  // namespace
}  // namespace gradshare::sim
