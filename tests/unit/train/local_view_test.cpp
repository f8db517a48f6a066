// local_view_test.cpp: gradient sharing's local view (encoding.local_view). A worker's gradient
// is taken at the shared model less its own residual, which leaves the shared parameters
// untouched; with one worker and no residual clipping, the shared model less the residual is
// then local training's model, step for step, up to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/rng.h"
#include "report/run_directory.h"
#include "thread_run.h"
#include "runtime/checkpointer.h"
#include "train/replica.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;

TEST(Replica, GradientAtOffsetIsTheGradientAtTheShiftedParameters) {
  const auto data = testing::blobs(256, 64, 16, 3);
  const auto config = testing::blobs_config("local", "unused");
  Replica replica(config, 10, 8, 0);
  const std::vector<float> before = replica.copy_parameters();
  std::vector<float> offset(before.size());
  core::Rng rng(5);
  for (auto& value : offset) value = 0.05f * rng.normal();
  const std::vector<std::uint32_t> batch = {0, 3, 5, 7, 11, 13, 17, 19};

  const auto result = replica.gradient_at_offset(offset, data.train, batch);
  const std::vector<float> gradient(replica.model().gradients().begin(),
                                    replica.model().gradients().end());
  EXPECT_EQ(replica.copy_parameters(), before) << "the parameters must come back bit for bit";

  Replica shifted(config, 10, 8, 0);
  for (std::size_t i = 0; i < before.size(); ++i)
    shifted.parameters()[i] = before[i] - offset[i];
  const auto expected = shifted.gradient(data.train, batch);
  EXPECT_EQ(result.loss, expected.loss);
  EXPECT_EQ(std::vector<float>(shifted.model().gradients().begin(),
                               shifted.model().gradients().end()),
            gradient);

  EXPECT_THROW(replica.gradient_at_offset(std::vector<float>(3), data.train, batch),
               std::exception);
  EXPECT_EQ(replica.copy_parameters(), before);
}

class LocalView : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gs-local-view-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs and returns the run directory.
  std::string run(const std::string& name, const std::string& strategy, int ranks,
                  const std::vector<std::string>& overrides) {
    const auto config = testing::blobs_config(strategy, (dir_ / name).string(), overrides);
    const auto result = testing::run_as_threads(config, data_, ranks);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(result.errors[static_cast<std::size_t>(r)], "") << name << " rank " << r;
      EXPECT_EQ(result.exit_codes[static_cast<std::size_t>(r)], 0) << name << " rank " << r;
    }
    return result.run_dir;
  }

  // A sharing run's newest checkpoint (the end of epoch 2, cut where the worker was).
  ckpt::Checkpoint sharing(const std::string& name, const std::string& local_view) {
    const auto dir = run(name, "gradient_sharing", 2,
                         {"encoding.residual=none", "encoding.local_view=" + local_view});
    const auto newest = runtime::newest_checkpoint(report::RunDirectory::attach(dir));
    EXPECT_TRUE(newest.has_value()) << name;
    return newest ? ckpt::read_checkpoint(*newest) : ckpt::Checkpoint{};
  }

  // Largest |shared - residual - local| over the parameters, against the nearest of the local
  // run's checkpoints: the cut of an asynchronous checkpoint falls where the worker was when
  // the master's request reached it, which may be past the step the checkpoint is named after.
  static double distance_to_local(const ckpt::Checkpoint& sharing, const std::string& local_dir) {
    EXPECT_EQ(sharing.residuals.size(), sharing.parameters.size());
    double nearest = 1e9;
    for (const auto& entry : fs::directory_iterator(fs::path(local_dir) / "checkpoints")) {
      const auto local = ckpt::read_checkpoint(entry.path().string());
      EXPECT_EQ(local.parameters.size(), sharing.parameters.size());
      if (local.parameters.size() != sharing.parameters.size()) return 1e9;
      double worst = 0;
      for (std::size_t i = 0; i < local.parameters.size(); ++i) {
        const double residual = i < sharing.residuals.size() ? sharing.residuals[i] : 0.0;
        worst = std::max(worst, std::fabs(sharing.parameters[i] - residual - local.parameters[i]));
      }
      nearest = std::min(nearest, worst);
    }
    return nearest;
  }

  fs::path dir_;
  data::DataSplits data_ = testing::blobs(2048, 512, 16, 11);
};

TEST_F(LocalView, OneWorkerFollowsLocalTraining) {
  // Local training with a checkpoint after every step (partitions of one minibatch: the same
  // minibatches in the same order), all kept.
  const auto local = run("local", "local", 1,
                         {"data.partition_batches=1", "checkpoint.every_steps=1",
                          "checkpoint.keep=1000"});
  const double viewed = distance_to_local(sharing("view", "true"), local);
  const double shared = distance_to_local(sharing("shared", "false"), local);
  // Rounding only with the view (a few float ulps a step); without it each gradient is taken
  // up to a residual away, and the runs part.
  EXPECT_LT(viewed, 1e-5) << "without the local view: " << shared;
  EXPECT_GT(shared, 100 * viewed);
}

}  // namespace
}  // namespace gradshare::train
