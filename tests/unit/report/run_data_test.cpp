// Tests of reading a run directory: records, the time axis across sessions, events, workers,
// and the one-line errors for a missing directory, a missing metrics.jsonl and malformed lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "report/run_data.h"

namespace gradshare::report {
namespace {

namespace fs = std::filesystem;

class RunDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gs-run-data-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string error_of(const std::string& directory) {
    try {
      RunData::load(directory);
    } catch (const core::UserError& error) {
      return error.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST_F(RunDataTest, ReadsRecordsSeriesAndWorkers) {
  write("config.yaml", "training:\n  strategy: gradient_sharing\n  epochs: 3\nmodel:\n  input_shape: [784]\n");
  write("metrics.jsonl",
        "{\"kind\":\"step\",\"step\":100,\"loss\":0.9,\"wall_seconds\":1.5,\"t\":2.0}\n"
        "\n"
        "{\"kind\":\"encoding_debug\",\"rank\":2,\"step\":100,\"tau_max\":0.01,\"t\":2.1}\n"
        "{\"kind\":\"step\",\"step\":200,\"loss\":null,\"t\":3.0}\n"
        "{\"kind\":\"step\",\"step\":300,\"loss\":0.5,\"t\":4.0}\n");
  write("rank-0.log", "10:00:00 INFO [master] hello\n");
  write("rank-1.log", "10:00:00 INFO [rank 1] a\n10:00:01 WARN [rank 1] b\n10:00:02 ERROR [rank 1] c\n");
  write("rank-x.log", "not a rank log\n");
  const RunData run = RunData::load(dir_.string());
  EXPECT_EQ(run.name(), dir_.filename().string());
  EXPECT_EQ(run.config_value("training.strategy"), "gradient_sharing");
  EXPECT_EQ(run.config_value("model.input_shape.0"), "784");
  EXPECT_EQ(run.config_value("training.missing"), "");
  ASSERT_EQ(run.records().size(), 4u);
  EXPECT_EQ(run.records()[1].line, 3);  // blank lines count

  const auto by_time = run.series("step", "loss", Axis::kTime);  // "t", not wall_seconds
  ASSERT_EQ(by_time.size(), 2u);                                  // the null is left out
  EXPECT_DOUBLE_EQ(by_time[0].x, 2.0);
  EXPECT_DOUBLE_EQ(by_time[1].y, 0.5);
  const auto by_step = run.series("step", "loss", Axis::kStep);
  EXPECT_DOUBLE_EQ(by_step[1].x, 300);
  EXPECT_EQ(run.series("encoding_debug", "tau_max", Axis::kStep, 2).size(), 1u);
  EXPECT_TRUE(run.series("encoding_debug", "tau_max", Axis::kStep, 1).empty());

  EXPECT_EQ(run.worker_ranks(), (std::vector<int>{1, 2}));  // a log, a record; not the master
  EXPECT_EQ(run.rank_logs().at(1).lines, 3);
  EXPECT_EQ(run.rank_logs().at(1).warnings, 1);
  EXPECT_EQ(run.rank_logs().at(1).errors, 1);
}

TEST_F(RunDataTest, ResumedSessionsFollowEachOtherAndEventsAreFound) {
  write("metrics.jsonl",
        "{\"kind\":\"step\",\"step\":100,\"loss\":0.9,\"t\":5}\n"
        "{\"kind\":\"checkpoint\",\"step\":100,\"file\":\"ckpt-000000000100.h5\",\"bytes\":2000000,\"seconds\":0.1,\"t\":6}\n"
        "{\"kind\":\"resume\",\"checkpoint\":\"/r/checkpoints/ckpt-000000000100.h5\",\"iteration\":100,\"epoch\":2,\"t\":1}\n"
        "{\"kind\":\"recovery\",\"lost\":\"[2]\",\"replaced\":\"[2]\",\"seconds\":0.5,\"t\":3}\n"
        "{\"kind\":\"step\",\"step\":200,\"loss\":0.5,\"t\":4}\n"
        "{\"kind\":\"final\",\"test_accuracy\":0.8,\"t\":4.5}\n");
  const RunData run = RunData::load(dir_.string());
  EXPECT_EQ(run.records()[1].session, 0);
  EXPECT_EQ(run.records()[2].session, 1);  // "t" fell back
  EXPECT_DOUBLE_EQ(*run.records()[4].time, 6 + 4);
  const auto events = run.events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, "checkpoint");
  EXPECT_DOUBLE_EQ(events[0].time, 6);
  EXPECT_EQ(events[0].step, 100);
  EXPECT_EQ(events[1].kind, "stop");  // session 0 ended without a final record
  EXPECT_DOUBLE_EQ(events[1].time, 6);
  EXPECT_EQ(events[2].kind, "resume");
  EXPECT_DOUBLE_EQ(events[2].time, 7);
  EXPECT_EQ(events[3].kind, "recovery");
  EXPECT_NE(events[3].detail.find("lost ranks [2], replaced by [2]"), std::string::npos) << events[3].detail;
}

// The master's "exit" record says how a session without a final record ended.
TEST_F(RunDataTest, AStoppedSessionSaysItsExitCode) {
  write("metrics.jsonl",
        "{\"kind\":\"step\",\"step\":100,\"loss\":0.9,\"t\":5}\n"
        "{\"kind\":\"exit\",\"exit_code\":75,\"t\":6}\n"
        "{\"kind\":\"resume\",\"checkpoint\":\"/r/c.h5\",\"iteration\":100,\"epoch\":1,\"t\":1}\n"
        "{\"kind\":\"step\",\"step\":200,\"loss\":0.5,\"t\":4}\n"
        "{\"kind\":\"exit\",\"exit_code\":3,\"t\":5}\n");
  const auto events = RunData::load(dir_.string()).events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "stop");
  EXPECT_DOUBLE_EQ(events[0].time, 6);
  EXPECT_EQ(events[0].detail,
            "stopped after its checkpoint (exit code 75: requeue); the next session resumed");
  EXPECT_EQ(events[1].kind, "resume");
  EXPECT_EQ(events[2].detail, "ended by the divergence guard (exit code 3)");
}

TEST_F(RunDataTest, RestartsAndEarlyStopsAreEvents) {
  write("metrics.jsonl",
        "{\"kind\":\"step\",\"step\":100,\"loss\":0.9,\"t\":5}\n"
        "{\"kind\":\"restart\",\"restart\":1,\"exit_code\":137,\"backoff_seconds\":5,\"t\":0.001}\n"
        "{\"kind\":\"epoch\",\"epoch\":2,\"step\":200,\"t\":2}\n"
        "{\"kind\":\"early_stop\",\"epoch\":2,\"reason\":\"test accuracy has not improved\",\"t\":2}\n"
        "{\"kind\":\"final\",\"test_accuracy\":0.8,\"t\":3}\n");
  const auto events = RunData::load(dir_.string()).events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "stop");  // the crashed session
  EXPECT_EQ(events[1].kind, "restart");
  EXPECT_NE(events[1].detail.find("restart 1 by gradshare run after exit code 137"), std::string::npos)
      << events[1].detail;
  EXPECT_EQ(events[2].kind, "early stop");
  EXPECT_NE(events[2].detail.find("after epoch 2: test accuracy"), std::string::npos) << events[2].detail;
}

TEST_F(RunDataTest, OlderFilesUseWallSecondsAndResumeRecords) {
  write("metrics.jsonl",
        "{\"kind\":\"epoch\",\"epoch\":1,\"step\":10,\"wall_seconds\":8}\n"
        "{\"kind\":\"resume\",\"checkpoint\":\"c.h5\",\"epoch\":2}\n"
        "{\"kind\":\"epoch\",\"epoch\":2,\"step\":20,\"wall_seconds\":7}\n");
  const RunData run = RunData::load(dir_.string());
  EXPECT_EQ(run.records()[2].session, 1);
  EXPECT_DOUBLE_EQ(*run.records()[2].time, 15);
}

TEST_F(RunDataTest, MalformedLineNamesFileAndLine) {
  write("metrics.jsonl", "{\"kind\":\"step\",\"t\":1}\n{\"kind\":\"step\",\"t\":2}\n{\"kind\":\"step\",\"loss\":0.3\n");
  const std::string error = error_of(dir_.string());
  EXPECT_NE(error.find((dir_ / "metrics.jsonl").string() + ":3: malformed JSON at column 26"), std::string::npos)
      << error;
}

TEST_F(RunDataTest, RecordsMustBeObjectsWithAKind) {
  write("metrics.jsonl", "[1,2]\n");
  EXPECT_NE(error_of(dir_.string()).find("metrics.jsonl:1: not a JSON object"), std::string::npos);
  write("metrics.jsonl", "{\"kind\":\"step\"}\n{\"step\":3}\n");
  EXPECT_NE(error_of(dir_.string()).find("metrics.jsonl:2: record without a \"kind\""), std::string::npos);
}

TEST_F(RunDataTest, MissingDirectoryOrMetricsIsAUserError) {
  EXPECT_EQ(error_of((dir_ / "nope").string()), (dir_ / "nope").string() + ": no such run directory");
  EXPECT_NE(error_of(dir_.string()).find((dir_ / "metrics.jsonl").string() + ": not found"), std::string::npos);
}

}  // namespace
}  // namespace gradshare::report
