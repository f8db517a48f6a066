// replica_clip_test.cpp: gradient clipping (optimizer.clip_norm) in the replica's step, and the
// local clipping of a worker whose update is one of several that add up.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "thread_run.h"
#include "train/replica.h"
#include "train/sharing/gradient_sharing.h"

namespace gradshare::train {
namespace {

double l2(const std::vector<float>& v) {
  double sum = 0.0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  return std::sqrt(sum);
}

// Plain SGD at learning rate 1: the update is minus the (clipped) gradient.
std::vector<float> sgd_update(const std::vector<std::string>& overrides, int workers,
                              const std::vector<float>& gradient) {
  std::vector<std::string> all = {"optimizer.type=sgd", "optimizer.learning_rate=1"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  const auto config = testing::blobs_config("local", "unused", all);
  Replica replica(workers > 1 ? one_of_summed_workers(config, workers) : config, 10, 8, 0);
  replica.compute_update(0, std::vector<float>(gradient.begin(), gradient.end()));
  return {replica.update().begin(), replica.update().end()};
}

TEST(Replica, ClipsTheGradientNormBeforeTheOptimizerStep) {
  const auto config = testing::blobs_config("local", "unused");
  const std::size_t n = Replica(config, 10, 8, 0).parameter_count();
  std::vector<float> gradient(n);
  for (std::size_t i = 0; i < n; ++i) gradient[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  const double norm = l2(gradient);
  ASSERT_GT(norm, 10.0);

  // Off: the update is the gradient, whatever its norm.
  const auto unclipped = sgd_update({}, 1, gradient);
  EXPECT_NEAR(l2(unclipped), norm, 1e-3 * norm);
  // Above the limit: scaled to it, the direction kept.
  const auto clipped = sgd_update({"optimizer.clip_norm=2"}, 1, gradient);
  EXPECT_NEAR(l2(clipped), 2.0, 1e-4);
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(clipped[i], unclipped[i] * 2.0 / norm, 1e-5);
  // Below the limit: untouched.
  EXPECT_EQ(sgd_update({"optimizer.clip_norm=1e6"}, 1, gradient), unclipped);
  // One of 4 workers whose updates add up: clip_norm / sqrt(4).
  EXPECT_NEAR(l2(sgd_update({"optimizer.clip_norm=2"}, 4, gradient)), 1.0, 1e-4);
}

TEST(Replica, SaysHowOftenItClipped) {
  auto config = testing::blobs_config("local", "unused", {"optimizer.clip_norm=2"});
  Replica replica(one_of_summed_workers(config, 4), 10, 8, 0);
  std::vector<float> small(replica.parameter_count(), 0.0f), large(replica.parameter_count(), 1.0f);
  replica.compute_update(0, small);
  replica.compute_update(1, large);
  replica.compute_update(2, large);
  EXPECT_EQ(replica.clipping_summary(), ", gradient clipped to norm 1 in 2 of 3 steps");
  EXPECT_EQ(Replica(testing::blobs_config("local", "unused"), 10, 8, 0).clipping_summary(), "");
}

// A gradient-sharing worker steps with its momentum compensated under encoding.momentum: compensate
// (as Downpour's, downpour_averaging_test.cpp) and clips as one of the workers under combine: sum.
TEST(SharingWorkerConfig, CompensatesMomentumAndClipsAsOneOfTheSummedWorkers) {
  config::ExperimentConfig config;
  config.optimizer.type = "adam";
  config.optimizer.beta1 = 0.9;
  config.optimizer.clip_norm = 2.0;
  config.encoding.combine = "sum";
  config.encoding.momentum = "as_set";
  EXPECT_DOUBLE_EQ(sharing_worker_config(config, 4).optimizer.beta1, 0.9);
  EXPECT_DOUBLE_EQ(sharing_worker_config(config, 4).optimizer.clip_norm, 1.0);
  EXPECT_EQ(sharing_momentum_line(config, 4), "");
  config.encoding.momentum = "compensate";
  EXPECT_NEAR(sharing_worker_config(config, 4).optimizer.beta1, 0.15, 1e-12);
  EXPECT_NEAR(sharing_worker_config(config, 2).optimizer.beta1, 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(sharing_worker_config(config, 1).optimizer.beta1, 0.9);  // no asynchrony
  EXPECT_NE(sharing_momentum_line(config, 4).find("beta1 0.15, lowered from 0.9"),
            std::string::npos)
      << sharing_momentum_line(config, 4);
  EXPECT_NE(sharing_momentum_line(config, 4).find("encoding.momentum: compensate"),
            std::string::npos);
  config.encoding.combine = "mean";
  EXPECT_DOUBLE_EQ(sharing_worker_config(config, 4).optimizer.clip_norm, 2.0);
  // SGD's momentum lowered as Adam's beta1, its learning rate raised (with_compensated_momentum).
  config.optimizer.type = "momentum";
  config.optimizer.momentum = 0.9;
  config.optimizer.learning_rate = 0.01;
  EXPECT_NEAR(sharing_worker_config(config, 4).optimizer.momentum, 0.15, 1e-12);
  EXPECT_NEAR(sharing_worker_config(config, 4).optimizer.learning_rate, 0.085, 1e-12);
  EXPECT_NE(sharing_momentum_line(config, 4).find("momentum 0.15, lowered from 0.9"),
            std::string::npos)
      << sharing_momentum_line(config, 4);
}

}  // namespace
}  // namespace gradshare::train
