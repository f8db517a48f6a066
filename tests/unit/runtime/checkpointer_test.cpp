// checkpointer_test.cpp: the checkpoints a run keeps, with the workers' parts beside them
// (ckpt/checkpoint.h): pruning a checkpoint removes its parts, and parts no checkpoint links
// (a master lost before it wrote the checkpoint) go once a later checkpoint is written.
#include "runtime/checkpointer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace gradshare::runtime {
namespace {

namespace fs = std::filesystem;

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gs_checkpointer_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    context_.config.run.dir = (root_ / "run").string();
    context_.config.checkpoint.keep = 1;
    context_.run_directory = report::RunDirectory::create(context_.config.run.dir, "");
    context_.metrics = report::MetricsLog(context_.run_directory.file("metrics.jsonl"));
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string in_checkpoints(const std::string& name) const {
    return context_.run_directory.checkpoint_dir() + "/" + name;
  }
  // A checkpoint at `iteration` of two workers, each with its part written first.
  ckpt::Checkpoint with_parts(std::int64_t iteration) const {
    ckpt::Checkpoint c;
    c.iteration = iteration;
    c.parameters = std::vector<float>(8, 1.0f);
    for (int rank : {1, 2}) {
      const auto part = worker_part_name(iteration, rank);
      ckpt::write_worker_part(in_checkpoints(part), {{3, {}}, std::vector<float>(8, 0.5f)});
      c.worker_parts.push_back(part);
    }
    return c;
  }

  fs::path root_;
  RunContext context_;
};

TEST_F(CheckpointerTest, NamesTheCheckpointAndItsParts) {
  EXPECT_EQ(checkpoint_file_name(1200), "ckpt-000000001200.h5");
  EXPECT_EQ(worker_part_name(1200, 3), "ckpt-000000001200.parts/worker-3.h5");
}

TEST_F(CheckpointerTest, APrunedCheckpointTakesItsPartsAlong) {
  Checkpointer checkpointer(context_);
  checkpointer.write(with_parts(100));
  checkpointer.write(with_parts(200));
  EXPECT_FALSE(fs::exists(in_checkpoints("ckpt-000000000100.h5")));
  EXPECT_FALSE(fs::exists(in_checkpoints("ckpt-000000000100.parts")));
  EXPECT_TRUE(fs::exists(in_checkpoints(worker_part_name(200, 2))));
  const auto kept = ckpt::read_checkpoint(in_checkpoints("ckpt-000000000200.h5"));
  EXPECT_EQ(kept.residuals, std::vector<float>(16, 0.5f));
}

TEST_F(CheckpointerTest, PartsNoCheckpointLinksGoOnceALaterOneIsWritten) {
  Checkpointer checkpointer(context_);
  // Parts of a collection whose checkpoint was never written, one before and one after.
  ckpt::write_worker_part(in_checkpoints(worker_part_name(150, 1)), {{1, {}}, {1.0f}});
  ckpt::write_worker_part(in_checkpoints(worker_part_name(300, 1)), {{1, {}}, {1.0f}});
  checkpointer.write(with_parts(200));
  EXPECT_FALSE(fs::exists(in_checkpoints("ckpt-000000000150.parts")));
  EXPECT_TRUE(fs::exists(in_checkpoints("ckpt-000000000300.parts")))
      << "a later collection's parts may still be waiting for their checkpoint";
  EXPECT_TRUE(fs::exists(in_checkpoints(worker_part_name(200, 1))));
}

}  // namespace
}  // namespace gradshare::runtime
