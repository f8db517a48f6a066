// master_takeover_test.cpp: what a new master reads of the run so far (metrics.jsonl, a line the
// lost master left cut short included) and the run lock it takes from the lost master, which
// RunLock::acquire would refuse as a live job's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "train/master_takeover.h"
#include "runtime/run_lock.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;

class MasterTakeover : public ::testing::Test {
 protected:
  MasterTakeover()
      : dir_(fs::temp_directory_path() / ("gradshare_takeover_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    context_.run_directory = report::RunDirectory::attach(dir_.string());
  }
  ~MasterTakeover() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  fs::path dir_;
  runtime::RunContext context_;
};

TEST_F(MasterTakeover, ReadsTheNewestEpochAndAnEarlyStopSkippingACutLine) {
  write("metrics.jsonl",
        "{\"kind\":\"step\",\"step\":10}\n"
        "{\"kind\":\"epoch\",\"epoch\":2,\"test_accuracy\":0.8,\"wall_seconds\":4.5}\n"
        "{\"kind\":\"epoch\",\"epoch\":3,\"test_accuracy\":0.81,\"wall_seconds\":6.25}\n"
        "{\"kind\":\"early_stop\",\"epoch\":3}\n"
        "{\"kind\":\"epoch\",\"ep");
  const auto so_far = read_run_so_far(context_);
  EXPECT_EQ(so_far.epochs_evaluated, 3);
  EXPECT_TRUE(so_far.stopped_early);
  EXPECT_DOUBLE_EQ(so_far.wall_seconds, 6.25);
}

TEST_F(MasterTakeover, ARunWithoutRecordsHasEvaluatedNothing) {
  const auto so_far = read_run_so_far(context_);
  EXPECT_EQ(so_far.epochs_evaluated, 0);
  EXPECT_FALSE(so_far.stopped_early);
}

TEST_F(MasterTakeover, TakesTheLostMastersLockThatAcquireRefuses) {
  // A lock refreshed just now by a process on another host: acquire cannot tell it is dead.
  write("run.lock", "pid 1\nhost another-node\nprocess_start 1\nstarted 2026-11-29T00:00:00\n");
  EXPECT_THROW(runtime::RunLock::acquire(dir_.string(), nullptr), core::UserError);
  const auto lock = runtime::RunLock::take_from_lost_master(dir_.string());
  std::ifstream file(dir_ / "run.lock");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("pid " + std::to_string(::getpid())), std::string::npos) << text;
}

}  // namespace
}  // namespace gradshare::train
