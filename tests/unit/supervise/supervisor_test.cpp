// gradshare run's decisions: which exit codes restart, the back-off, the run directory, and a
// real child process (exit codes, signals, a program that cannot be executed).
#include "supervise/supervisor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "core/errors.h"
#include "supervise/child_process.h"

namespace gradshare::supervise {
namespace {

TEST(Supervisor, RestartsCrashesOnly) {
  EXPECT_EQ(decide(0, false), Next::kDone);
  EXPECT_EQ(decide(1, false), Next::kRestart);    // runtime failure, a lost rank
  EXPECT_EQ(decide(137, false), Next::kRestart);  // mpirun after a SIGKILLed rank
  EXPECT_EQ(decide(14, false), Next::kRestart);   // Open MPI's own start-up failure
  EXPECT_EQ(decide(2, false), Next::kGiveUp);     // bad input stays bad
  EXPECT_EQ(decide(3, false), Next::kGiveUp);     // diverged
  EXPECT_EQ(decide(127, false), Next::kGiveUp);   // cannot execute
  EXPECT_EQ(decide(75, true), Next::kGiveUp);     // our stop signal: requeue
  EXPECT_EQ(decide(75, false), Next::kRestart);   // the job asked for a requeue itself
}

TEST(Supervisor, BackoffDoublesUpToItsCap) {
  RestartPolicy policy;
  policy.backoff_seconds = 5;
  policy.max_backoff_seconds = 30;
  EXPECT_DOUBLE_EQ(backoff_before(policy, 1), 5);
  EXPECT_DOUBLE_EQ(backoff_before(policy, 2), 10);
  EXPECT_DOUBLE_EQ(backoff_before(policy, 3), 20);
  EXPECT_DOUBLE_EQ(backoff_before(policy, 4), 30);
}

TEST(Supervisor, RunDirIsTheLastRunDirArgument) {
  EXPECT_EQ(run_dir_of({"mpirun", "-n", "3", "gradshare", "train", "c.yaml", "run.dir=a",
                        "run.dir=runs/b"}),
            "runs/b");
  EXPECT_THROW(run_dir_of({"mpirun", "gradshare", "train", "c.yaml", "run.name=x"}),
               core::UserError);
}

TEST(Supervisor, RejectsBadOptions) {
  EXPECT_THROW(run_command({"--max-restarts", "-1", "--", "true", "run.dir=x"}), core::UserError);
  EXPECT_THROW(run_command({"--backoff", "soon", "--", "true", "run.dir=x"}), core::UserError);
  EXPECT_THROW(run_command({"--retries", "2", "--", "true", "run.dir=x"}), core::UserError);
  EXPECT_THROW(run_command({"--max-restarts", "2"}), core::UserError);
}

// Runs `gradshare run` on a shell script whose first attempt does `first` and whose later ones
// write a final record; returns the exit code and the run's metrics.
std::pair<int, std::string> supervise(const std::string& first, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gs-supervise-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string flag = dir.string() + ".tried";
  std::filesystem::remove(flag);
  const std::string later = "mkdir -p " + dir.string() + " && echo '{\"kind\":\"final\"}' >> " +
                            dir.string() + "/metrics.jsonl";
  const std::string script =
      "if test -f " + flag + "; then " + later + "; else touch " + flag + "; " + first + "; fi";
  const int code = run_command({"--backoff", "0", "--max-restarts", "1", "--", "sh", "-c", script,
                                "sh", "run.dir=" + dir.string()});
  std::ifstream in(dir / "metrics.jsonl");
  std::string metrics((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  std::filesystem::remove(flag);
  return {code, metrics};
}

// A job lost during start-up, before it made its run directory: the restart is still recorded.
TEST(Supervisor, RecordsARestartBeforeTheRunDirectoryExists) {
  const auto [code, metrics] = supervise("exit 1", "startup");
  EXPECT_EQ(code, 0);
  EXPECT_NE(metrics.find("\"kind\":\"restart\",\"restart\":1,\"exit_code\":1"), std::string::npos)
      << metrics;
}

// Exit 0 without the final record (under ULFM, a master killed after its workers finished): a
// crash, restarted.
TEST(Supervisor, ExitZeroWithoutAFinalRecordIsACrash) {
  const auto [code, metrics] = supervise("exit 0", "no-final");
  EXPECT_EQ(code, 0);
  EXPECT_NE(metrics.find("\"kind\":\"restart\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"kind\":\"final\""), std::string::npos) << metrics;
}

// The first attempt's metrics get `record` (a JSON line); its $1 is run.dir=DIR.
std::string record_then(const std::string& record, const std::string& then) {
  return "d=${1#run.dir=}; mkdir -p $d && echo '" + record + "' >> $d/metrics.jsonl; " + then;
}

// A launcher ended by a signal after the master recorded its code (prterun aborting in its
// teardown): the master's code decides. 3 (the divergence guard) is not restarted.
TEST(Supervisor, ALauncherCrashAfterTheMastersExitTakesTheMastersCode) {
  const auto [code, metrics] =
      supervise(record_then("{\"kind\":\"exit\",\"exit_code\":3}", "kill -6 $$"), "abort");
  EXPECT_EQ(code, 3);
  EXPECT_EQ(metrics.find("\"kind\":\"restart\""), std::string::npos) << metrics;
}

// Without the record, or when the launcher exited by itself, its own code decides: a crash.
TEST(Supervisor, OnlyASignalledLauncherDefersToTheRecord) {
  for (const auto& first : {std::string("kill -6 $$"),
                            record_then("{\"kind\":\"exit\",\"exit_code\":3}", "exit 1")}) {
    const auto [code, metrics] = supervise(first, "crash");
    EXPECT_EQ(code, 0) << first;
    EXPECT_NE(metrics.find("\"kind\":\"restart\""), std::string::npos) << metrics;
  }
}

TEST(ChildProcess, ReportsExitCodesSignalsAndExecFailures) {
  EXPECT_EQ(run_child({"sh", "-c", "exit 0"}, 60).code, 0);
  EXPECT_EQ(run_child({"sh", "-c", "exit 42"}, 60).code, 42);
  EXPECT_EQ(run_child({"sh", "-c", "kill -9 $$"}, 60).code, 128 + 9);
  EXPECT_EQ(run_child({"/nonexistent/program"}, 60).code, 127);
}

// A launcher whose processes all ended but which stays (what prterun did) is killed; one that
// never started a process, or is still waiting for a live one, is not.
TEST(ChildProcess, KillsALauncherThatOutlivesItsProcesses) {
  const auto hung = run_child({"sh", "-c", "sleep 0.5 & wait; exec sleep 30"}, 1.0);
  EXPECT_TRUE(hung.hung);
  EXPECT_EQ(hung.code, 128 + 9);
  const auto childless = run_child({"sh", "-c", "exec sleep 2"}, 0.5);
  EXPECT_FALSE(childless.hung);
  EXPECT_EQ(childless.code, 0);
  const auto waiting = run_child({"sh", "-c", "sleep 2; exit 5"}, 0.5);
  EXPECT_FALSE(waiting.hung);
  EXPECT_EQ(waiting.code, 5);
}

}  // namespace
}  // namespace gradshare::supervise
