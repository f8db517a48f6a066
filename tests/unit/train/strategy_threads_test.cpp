// strategy_threads_test.cpp: each strategy's master and workers run as threads of this process
// over the in-process job (control channel, workers' group, data plane, Downpour's shards), on
// synthetic data. What a run must leave: every rank ending with 0 and no control message left
// unreceived, a model.h5 of the expected step that has learnt the data, the epoch checkpoint
// with the optimizer state, and the master's record of the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ckpt/checkpoint.h"
#include "nn/model.h"
#include "thread_run.h"
#include "runtime/checkpointer.h"
#include "report/run_directory.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;

class StrategyThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gs-threads-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `strategy` on `ranks` threads and checks what every run must leave; returns it.
  testing::ThreadRun run(const std::string& strategy, int ranks,
                         const std::vector<std::string>& overrides = {}) {
    config_ = testing::blobs_config(strategy, dir_.string(), overrides);
    auto result = testing::run_as_threads(config_, data_, ranks);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(result.errors[static_cast<std::size_t>(r)], "") << "rank " << r;
      EXPECT_EQ(result.exit_codes[static_cast<std::size_t>(r)], 0) << "rank " << r;
    }
    EXPECT_EQ(result.unreceived, 0u) << "control messages left unreceived";
    const auto model_file = fs::path(result.run_dir) / "model.h5";
    EXPECT_TRUE(fs::exists(model_file));
    if (fs::exists(model_file)) {
      EXPECT_GE(testing::file_accuracy(model_file.string(), config_, data_), 0.9);
    }
    std::ifstream metrics(fs::path(result.run_dir) / "metrics.jsonl");
    std::stringstream text;
    text << metrics.rdbuf();
    EXPECT_NE(text.str().find("\"kind\":\"final\""), std::string::npos) << text.str();
    metrics_ = text.str();
    return result;
  }

  // The newest checkpoint, written at the end of `epoch` (asynchronous strategies: at `epoch` or
  // later, the workers train on while it is taken, and on an idle machine finish the run
  // first): its step, parameters and optimizer state.
  ckpt::Checkpoint epoch_checkpoint(const testing::ThreadRun& result, std::int64_t epoch,
                                    bool or_later = false) {
    const auto newest = runtime::newest_checkpoint(report::RunDirectory::attach(result.run_dir));
    EXPECT_TRUE(newest.has_value());
    if (!newest) return {};
    auto checkpoint = ckpt::read_checkpoint(*newest);
    const auto n = nn::Model::build(config_.model, 1).parameter_count();
    EXPECT_EQ(checkpoint.parameters.size(), n);
    if (or_later) {
      EXPECT_GE(checkpoint.epoch, epoch) << *newest << "\n" << metrics_;
    } else {
      EXPECT_EQ(checkpoint.epoch, epoch) << *newest << "\n" << metrics_;
    }
    EXPECT_FALSE(checkpoint.optimizer_state.empty() && checkpoint.worker_optimizers.empty());
    return checkpoint;
  }

  fs::path dir_;
  config::ExperimentConfig config_;
  std::string metrics_;  // the run's metrics.jsonl
  data::DataSplits data_ = testing::blobs(2048, 512, 16, 11);
};

TEST_F(StrategyThreads, Local) {
  const auto result = run("local", 1);
  // 2048 samples in minibatches of 32: 64 steps an epoch.
  EXPECT_EQ(epoch_checkpoint(result, 2).iteration, 128);
  EXPECT_EQ(ckpt::read_checkpoint((fs::path(result.run_dir) / "model.h5").string()).iteration, 128);
}

TEST_F(StrategyThreads, Allreduce) {
  const auto result = run("allreduce", 4);
  // A checkpoint's iteration counts the minibatches the workers trained: 64 an epoch (22 steps
  // of 3 workers).
  EXPECT_EQ(epoch_checkpoint(result, 2).iteration, 128);
  EXPECT_EQ(ckpt::read_checkpoint((fs::path(result.run_dir) / "model.h5").string()).iteration, 128);
  // Every epoch's minibatches trained, counted by the workers.
  EXPECT_NE(metrics_.find("\"kind\":\"epoch\",\"epoch\":1"), std::string::npos) << metrics_;
  EXPECT_NE(metrics_.find("\"minibatches\":64"), std::string::npos) << metrics_;
}

TEST_F(StrategyThreads, ParameterAveraging) {
  // Verified rounds: the workers' parameters are the same bits after every round (a mismatch
  // ends the run with an error, which run() reports).
  const auto result = run("parameter_averaging", 4,
                          {"training.averaging_frequency=4", "training.verify_averaging=true"});
  // A checkpoint's iteration counts the minibatches all workers trained: 64 an epoch. The
  // last epoch's end has none: model.h5 is the end.
  EXPECT_EQ(epoch_checkpoint(result, 1).iteration, 64);
}

// Gradient sharing over in-process rings along the tree: the master's drain check passes (every
// replica equal to the master's, or the run throws), no update is applied twice, and the
// checkpoint keeps each worker's residual.
void expect_sharing_run(const std::string& metrics, const ckpt::Checkpoint& checkpoint,
                        int workers) {
  const bool none_twice = metrics.find("\"applied_twice\":0,") != std::string::npos ||
                          metrics.find("\"applied_twice\":0}") != std::string::npos;
  EXPECT_TRUE(none_twice) << metrics;
  EXPECT_EQ(checkpoint.thresholds.size(), static_cast<std::size_t>(workers));
  EXPECT_EQ(checkpoint.residuals.size(),
            static_cast<std::size_t>(workers) * checkpoint.parameters.size());
}

// Asynchronous workers on a loaded machine run far apart (staleness up to 20 steps seen): two
// epochs of 64 steps left 87-97 % on the blobs; four learn them whatever the interleaving.
constexpr const char* kSharingEpochs = "training.epochs=4";

TEST_F(StrategyThreads, GradientSharingPlain) {
  const auto result = run("gradient_sharing", 4, {"topology.mode=plain", kSharingEpochs});
  expect_sharing_run(metrics_, epoch_checkpoint(result, 1, /*or_later=*/true), 3);
}

TEST_F(StrategyThreads, GradientSharingMesh) {
  // 5 workers under a fan-out of 2: inner workers relay every update.
  const auto result =
      run("gradient_sharing", 6, {"topology.mode=mesh", "topology.max_children=2",
                                  "topology.aggregate=false", kSharingEpochs});
  expect_sharing_run(metrics_, epoch_checkpoint(result, 1, /*or_later=*/true), 5);
}

TEST_F(StrategyThreads, GradientSharingMeshAggregating) {
  // The same tree, its inner nodes aggregating: every epoch's checkpoint and the drain are flush
  // rounds, after which each replica equals the master's to rounding (or the run throws).
  const auto result = run("gradient_sharing", 6,
                          {"topology.mode=mesh", "topology.max_children=2",
                           "topology.aggregate=true", kSharingEpochs});
  expect_sharing_run(metrics_, epoch_checkpoint(result, 1, /*or_later=*/true), 5);
}

TEST_F(StrategyThreads, Downpour) {
  // Two parameter servers (rank 0, the master, serves shard 0) and three workers over the
  // in-process transport; at the end every worker's final pull equals the servers' shards.
  const auto result = run("downpour", 5, {"downpour.servers=2"});
  const auto checkpoint = epoch_checkpoint(result, 1, /*or_later=*/true);
  EXPECT_FALSE(checkpoint.worker_optimizers.empty());
  EXPECT_NE(metrics_.find("\"consistent\":true"), std::string::npos) << metrics_;
}

}  // namespace
}  // namespace gradshare::train
