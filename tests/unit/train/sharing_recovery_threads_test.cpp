// sharing_recovery_threads_test.cpp: gradient sharing's recovery from a worker that dies, with
// the master and workers as threads of this process over a repairable in-process job
// (comm/in_process_failures.h behaves as ULFM does). A fault injection ends one worker's thread
// mid-training; the others must repair the job (shrink, or replace from a spare thread), resync,
// and finish: every live rank ends with 0, the master's equivalence check passes (it throws
// otherwise), nothing is applied twice, the model learnt the data, and the recovery is recorded.
// And the converse: a step far longer than the liveness timeout is no death.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "thread_run.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;

class SharingRecoveryThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gs-recovery-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs gradient sharing for 30 epochs on `ranks` threads with worker `victim` ended at its
  // step 3; checks every other rank ended well and returns the master's metrics. The run lasts
  // long enough that every worker gets partitions however the threads are scheduled: in 6
  // epochs (about 0.1 s) a loaded machine once kept the victim from its step 3 until the others
  // had trained every partition. The divergence guard only watches for non-finite losses: 30
  // epochs take the blobs' loss to about 0.002, where its factor of 10 over the running minimum
  // is noise.
  std::string run(int ranks, int victim, const std::vector<std::string>& overrides) {
    auto all = overrides;
    all.push_back("training.epochs=30");
    all.push_back("training.divergence_factor=0");
    all.push_back("fault_tolerance.inject=[{rank: " + std::to_string(victim) +
                  ", at_step: 3, kind: sigkill}]");
    const auto config = testing::blobs_config("gradient_sharing", dir_.string(), all);
    const auto result = testing::run_as_threads(config, data_, ranks, /*repairable=*/true);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(result.errors[static_cast<std::size_t>(r)], "") << "rank " << r;
      EXPECT_EQ(result.exit_codes[static_cast<std::size_t>(r)],
                r == victim ? testing::kEndedByFault : 0)
          << "rank " << r;
    }
    EXPECT_EQ(result.unreceived, 0u) << "control messages left unreceived";
    const auto model_file = fs::path(result.run_dir) / "model.h5";
    EXPECT_TRUE(fs::exists(model_file));
    if (fs::exists(model_file)) {
      EXPECT_GE(testing::file_accuracy(model_file.string(), config, data_), 0.9);
    }
    std::ifstream metrics(fs::path(result.run_dir) / "metrics.jsonl");
    std::stringstream text;
    text << metrics.rdbuf();
    const std::string records = text.str();
    EXPECT_NE(records.find("\"kind\":\"final\""), std::string::npos) << records;
    const bool none_twice = records.find("\"applied_twice\":0,") != std::string::npos ||
                            records.find("\"applied_twice\":0}") != std::string::npos;
    EXPECT_TRUE(none_twice) << records;
    EXPECT_NE(records.find("\"kind\":\"recovery_summary\",\"recoveries\":1,"), std::string::npos)
        << records;
    return records;
  }

  // Rank 1 relays for its children under a fan-out of 2: it is lost, they are re-attached.
  void shrink_mesh_inner_node(const std::string& aggregate) {
    const auto metrics = run(6, 1,
                             {"topology.mode=mesh", "topology.max_children=2", aggregate,
                              "fault_tolerance.on_worker_failure=shrink"});
    EXPECT_NE(metrics.find("\"kind\":\"recovery\",\"lost\":\"[1]\",\"replaced\":\"[]\""),
              std::string::npos)
        << metrics;
  }

  fs::path dir_;
  data::DataSplits data_ = testing::blobs(2048, 512, 16, 11);
};

TEST_F(SharingRecoveryThreads, ShrinkPlain) {
  const auto metrics = run(4, 2, {"topology.mode=plain", "fault_tolerance.on_worker_failure=shrink"});
  EXPECT_NE(metrics.find("\"kind\":\"recovery\",\"lost\":\"[2]\",\"replaced\":\"[]\""),
            std::string::npos)
      << metrics;
}

TEST_F(SharingRecoveryThreads, ShrinkMeshInnerNode) {
  // Relaying, the updates rank 1's children had sent through it are resynced.
  shrink_mesh_inner_node("topology.aggregate=false");
}

TEST_F(SharingRecoveryThreads, ShrinkAggregatingMeshInnerNode) {
  // Aggregating, every survivor's relay starts again from the master's parameters.
  shrink_mesh_inner_node("topology.aggregate=true");
}

TEST_F(SharingRecoveryThreads, ReplaceFromSpare) {
  // Threads 0-3 are the job, thread 4 the spare that becomes rank 3.
  const auto metrics = run(5, 3,
                           {"topology.mode=plain", "fault_tolerance.on_worker_failure=replace",
                            "fault_tolerance.spares=1"});
  EXPECT_NE(metrics.find("\"kind\":\"recovery\",\"lost\":\"[3]\",\"replaced\":\"[3]\""),
            std::string::npos)
      << metrics;
}

TEST_F(SharingRecoveryThreads, LongStepIsNoDeath) {
  // Worker 2's step 3 lasts 3 x fault_tolerance.timeout_ms (6 s); its heartbeat thread beats
  // on meanwhile, so nobody is declared dead: in one process the master cannot stop a thread it
  // took for dead and ends the run with an error instead, which this test would see. The
  // timeout is 20 heartbeats, far above what a loaded machine delays one by.
  const auto config = testing::blobs_config(
      "gradient_sharing", dir_.string(),
      {"topology.mode=plain", "fault_tolerance.timeout_ms=2000", "fault_tolerance.heartbeat_ms=100",
       "fault_tolerance.inject=[{rank: 2, at_step: 3, kind: stall}]"});
  const auto result = testing::run_as_threads(config, data_, 4, /*repairable=*/true);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(result.errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(result.exit_codes[static_cast<std::size_t>(r)], 0) << "rank " << r;
  }
  std::ifstream metrics(fs::path(result.run_dir) / "metrics.jsonl");
  std::stringstream text;
  text << metrics.rdbuf();
  EXPECT_EQ(text.str().find("\"kind\":\"recovery"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"kind\":\"final\""), std::string::npos) << text.str();
}

}  // namespace
}  // namespace gradshare::train
