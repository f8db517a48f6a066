// group_recovery_threads_test.cpp: in-job recovery of the strategies on a group session from a
// worker that dies — the synchronous ones (the dense all-reduce and parameter averaging,
// train/group_recovery.h) and Downpour (train/downpour/network.h) — with the master, servers and
// workers as threads of this process over a repairable in-process job
// (comm/in_process_failures.h behaves as ULFM does). A fault injection ends one worker's thread
// mid-training; the others repair (replace from a spare thread, shrink, or abort) and finish.
// Checked: every live rank's exit code, no control message left unreceived, every epoch's
// minibatches counted in full, the recovery recorded; for the synchronous strategies with a
// replacement the very model an undisturbed run ends with, for Downpour every worker's final
// pull equal to the servers' model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "ckpt/checkpoint.h"
#include "thread_run.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;

class GroupRecoveryThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gs-group-recovery-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Result {
    std::string metrics;
    std::vector<float> model;  // model.h5's parameters (empty when there is none)
  };

  // `strategy` on `ranks` threads for 3 epochs; worker `victim` (0: none) ends at its step 10.
  // Checks that every other rank ended with `code`.
  Result run(const std::string& strategy, int ranks, int victim,
             std::vector<std::string> overrides, int code = 0) {
    overrides.push_back("training.epochs=3");
    // A schedule, so that a recovery that resumes one step off the learning rate's clock shows.
    overrides.push_back("optimizer.schedule=cosine");
    if (victim > 0)
      overrides.push_back("fault_tolerance.inject=[{rank: " + std::to_string(victim) +
                          ", at_step: 10, kind: sigkill}]");
    auto config = testing::blobs_config(strategy, (dir_ / std::to_string(runs_++)).string(),
                                        overrides);
    auto result = testing::run_as_threads(config, data_, ranks, /*repairable=*/true);
    // Downpour's workers take partitions as they ask: a victim thread the scheduler kept off
    // the cores while the others trained the whole (milliseconds long) run got none, never
    // reached its step 10 and ended normally (about 1 run in 150 under two CPU burners). The
    // failure this test is about did not happen then: the run is made again, a bounded number
    // of times, and every check below applies to the run where it did.
    for (int again = 0; again < 5 && victim > 0 &&
                        result.exit_codes[static_cast<std::size_t>(victim)] == 0;
         ++again) {
      std::cerr << "worker " << victim << " trained to the end without reaching its step 10 "
                << "(starved of partitions): running again\n";
      config = testing::blobs_config(strategy, (dir_ / std::to_string(runs_++)).string(),
                                     overrides);
      result = testing::run_as_threads(config, data_, ranks, /*repairable=*/true);
    }
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(result.errors[static_cast<std::size_t>(r)], "") << "rank " << r;
      EXPECT_EQ(result.exit_codes[static_cast<std::size_t>(r)],
                victim > 0 && r == victim ? testing::kEndedByFault : code)
          << "rank " << r;
    }
    EXPECT_EQ(result.unreceived, 0u) << "control messages left unreceived";
    Result out;
    std::ifstream metrics(fs::path(result.run_dir) / "metrics.jsonl");
    std::stringstream text;
    text << metrics.rdbuf();
    out.metrics = text.str();
    const auto model_file = fs::path(result.run_dir) / "model.h5";
    if (fs::exists(model_file)) {
      out.model = ckpt::read_checkpoint(model_file.string()).parameters;
      EXPECT_GE(testing::file_accuracy(model_file.string(), config, data_), 0.9);
    }
    return out;
  }

  // 2048 samples in minibatches of 32: 64 an epoch, counted by the workers in the records of
  // epochs 1 and 2 and (the last) in the final record.
  static void expect_every_minibatch(const std::string& metrics) {
    for (const char* record : {"\"kind\":\"epoch\",\"epoch\":1,", "\"kind\":\"epoch\",\"epoch\":2,",
                               "\"kind\":\"final\","}) {
      const auto at = metrics.find(record);
      ASSERT_NE(at, std::string::npos) << record << "\n" << metrics;
      const auto end = metrics.find('\n', at);
      EXPECT_NE(metrics.substr(at, end - at).find("\"minibatches\":64,"), std::string::npos)
          << metrics.substr(at, end - at);
    }
  }

  // A Downpour run that recovered (`recovery`: the record's lost and replaced lists) to the
  // end: every push applied exactly once, every worker on the servers' model, every minibatch.
  static void expect_downpour_recovered(const Result& run, const std::string& recovery) {
    EXPECT_NE(run.metrics.find("\"kind\":\"recovery\"," + recovery), std::string::npos)
        << run.metrics;
    EXPECT_NE(run.metrics.find("\"consistent\":true,\"pushes_applied_once\":true"),
              std::string::npos)
        << run.metrics;
    expect_every_minibatch(run.metrics);
    EXPECT_FALSE(run.model.empty());
  }

  fs::path dir_;
  int runs_ = 0;
  data::DataSplits data_ = testing::blobs(2048, 512, 16, 11);
};

TEST_F(GroupRecoveryThreads, AllreduceReplaceFromSpareEndsWithTheUndisturbedModel) {
  // Threads 0-3 are the job, thread 4 the spare that becomes rank 2. The step the failure
  // interrupted is trained again with the same minibatches: the same model, bit for bit.
  const std::vector<std::string> spare = {"fault_tolerance.spares=1"};
  const auto undisturbed = run("allreduce", 5, 0, spare);
  const auto killed = run("allreduce", 5, 2, spare);
  EXPECT_NE(killed.metrics.find("\"kind\":\"recovery\",\"lost\":\"[2]\",\"replaced\":\"[2]\""),
            std::string::npos)
      << killed.metrics;
  expect_every_minibatch(killed.metrics);
  ASSERT_FALSE(undisturbed.model.empty());
  EXPECT_EQ(killed.model, undisturbed.model);
}

TEST_F(GroupRecoveryThreads, AllreduceShrinkAfterTheReportingWorkerDies) {
  // Rank 1 is worker index 0, the one that reports to the master: rank 2 takes that over.
  const auto killed = run("allreduce", 4, 1, {"fault_tolerance.on_worker_failure=shrink"});
  EXPECT_NE(killed.metrics.find("\"kind\":\"recovery\",\"lost\":\"[1]\",\"replaced\":\"[]\""),
            std::string::npos)
      << killed.metrics;
  expect_every_minibatch(killed.metrics);
}

TEST_F(GroupRecoveryThreads, AveragingReplaceFromSpareEndsWithTheUndisturbedModel) {
  // The interrupted round is trained again from the newest averaged state (parameters and
  // averaged updater state): the same model, bit for bit; every round verified identical.
  const std::vector<std::string> options = {"fault_tolerance.spares=1",
                                            "training.averaging_frequency=4",
                                            "training.verify_averaging=true"};
  const auto undisturbed = run("parameter_averaging", 5, 0, options);
  const auto killed = run("parameter_averaging", 5, 1, options);
  EXPECT_NE(killed.metrics.find("\"kind\":\"recovery\",\"lost\":\"[1]\",\"replaced\":\"[1]\""),
            std::string::npos)
      << killed.metrics;
  EXPECT_NE(killed.metrics.find("\"averaging_identical\":true"), std::string::npos)
      << killed.metrics;
  expect_every_minibatch(killed.metrics);
  ASSERT_FALSE(undisturbed.model.empty());
  EXPECT_EQ(killed.model, undisturbed.model);
}

TEST_F(GroupRecoveryThreads, AveragingAbortCheckpointsAndStops) {
  // on_worker_failure abort: the survivors checkpoint at their next round and every rank ends
  // with the requeue code (a rerun resumes from that checkpoint).
  const auto killed = run("parameter_averaging", 4, 3,
                          {"fault_tolerance.on_worker_failure=abort",
                           "training.averaging_frequency=4"},
                          /*code=*/75);
  EXPECT_NE(killed.metrics.find("\"kind\":\"recovery\""), std::string::npos) << killed.metrics;
  EXPECT_EQ(killed.metrics.find("\"kind\":\"final\""), std::string::npos) << killed.metrics;
  EXPECT_TRUE(killed.model.empty());
}

// Downpour's workers take partitions as they come: one of 16 minibatches is the victim's first,
// so it reaches its step 10 however slowly its thread runs beside the others.
const char* const kWholeFirstPartition = "data.partition_batches=16";

TEST_F(GroupRecoveryThreads, DownpourReplaceFromSpare) {
  // Rank 0 serves the one shard, ranks 1-3 work, thread 4 waits as a spare and becomes rank 2:
  // it pulls the servers' model and continues rank 2's push sequence.
  const auto killed = run("downpour", 5, 2, {"fault_tolerance.spares=1", kWholeFirstPartition});
  expect_downpour_recovered(killed, "\"lost\":\"[2]\",\"replaced\":\"[2]\"");
}

TEST_F(GroupRecoveryThreads, DownpourShrinkWithShardedServers) {
  // Ranks 0 and 1 serve a shard each, ranks 2-4 work; rank 3 dies and the other two finish.
  const auto killed = run("downpour", 5, 3,
                          {"fault_tolerance.on_worker_failure=shrink", "downpour.servers=2",
                           "downpour.encode=true", kWholeFirstPartition});
  expect_downpour_recovered(killed, "\"lost\":\"[3]\",\"replaced\":\"[]\"");
}

TEST_F(GroupRecoveryThreads, DownpourAbortCheckpointsAndStops) {
  const auto killed =
      run("downpour", 4, 1, {"fault_tolerance.on_worker_failure=abort", kWholeFirstPartition},
          /*code=*/75);
  EXPECT_NE(killed.metrics.find("\"kind\":\"recovery\""), std::string::npos) << killed.metrics;
  EXPECT_EQ(killed.metrics.find("\"kind\":\"final\""), std::string::npos) << killed.metrics;
  EXPECT_TRUE(killed.model.empty());
}

}  // namespace
}  // namespace gradshare::train
