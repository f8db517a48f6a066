#include "supervise/supervisor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "supervise/child_process.h"
#include "report/metrics_log.h"
#include "runtime/run_lock.h"

namespace gradshare::supervise {

namespace fs = std::filesystem;

namespace {

constexpr int kCannotExecute = 127;
constexpr int kNotExecutable = 126;
constexpr int kKilledBySignal = 128;  // a shell's code for a process signal N ended: 128 + N

double parse_seconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
    throw core::UserError("run: " + flag + " needs a number of seconds >= 0, got '" + value + "'");
  return seconds;
}

int parse_count(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long count = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || count < 0 || count > 1000)
    throw core::UserError("run: " + flag + " needs an integer in [0, 1000], got '" + value + "'");
  return static_cast<int>(count);
}

std::string joined(const std::vector<std::string>& command) {
  std::string text;
  for (const auto& arg : command) text += (text.empty() ? "" : " ") + arg;
  return text;
}

// A lock made since the attempt started is the ended attempt's own: its master is gone.
void remove_lock_of_attempt(const std::string& run_dir, std::time_t attempt_start) {
  const std::string path = run_dir + "/run.lock";
  if (!fs::exists(path)) return;
  const std::time_t started = runtime::RunLock::started_at(path);
  if (started < attempt_start) return;  // another job's (or unreadable): run_lock.h decides
  std::error_code error;
  fs::remove(path, error);
  if (!error) core::log_warn("removed the run lock the ended attempt left in " + run_dir);
}

// Bytes of DIR/metrics.jsonl now (0 when there is none yet).
std::uintmax_t metrics_size(const std::string& run_dir) {
  std::error_code error;
  const auto size = fs::file_size(run_dir + "/metrics.jsonl", error);
  return error ? 0 : size;
}

// What an attempt wrote to DIR/metrics.jsonl after its first `offset` bytes.
struct AttemptRecords {
  bool final = false;            // a "final" record: it trained to the end and wrote model.h5
  std::optional<int> exit_code;  // the newest "exit" record's: the code its master ended with
};

AttemptRecords read_attempt_records(const std::string& run_dir, std::uintmax_t offset) {
  std::ifstream metrics(run_dir + "/metrics.jsonl");
  metrics.seekg(static_cast<std::streamoff>(offset));
  AttemptRecords records;
  const std::string key = "\"exit_code\":";
  std::string line;
  while (std::getline(metrics, line)) {
    if (line.find("\"kind\":\"final\"") != std::string::npos) records.final = true;
    if (line.find("\"kind\":\"exit\"") == std::string::npos) continue;
    const auto at = line.find(key);
    if (at != std::string::npos) records.exit_code = std::atoi(line.c_str() + at + key.size());
  }
  return records;
}

void record_restart(const std::string& run_dir, int restart, int exit_code, double backoff) {
  // An attempt lost during start-up may not have made the run directory yet: the restart is
  // counted all the same (the next attempt makes the rest of it).
  std::error_code error;
  fs::create_directories(run_dir, error);
  if (error) {
    core::log_warn("cannot record the restart in " + run_dir + ": " + error.message());
    return;
  }
  report::MetricsLog(run_dir + "/metrics.jsonl")
      .write(report::JsonLine()
                 .add("kind", "restart")
                 .add("restart", restart)
                 .add("exit_code", exit_code)
                 .add("backoff_seconds", backoff));
}

}  // namespace

Next decide(int exit_code, bool stop_signalled) {
  if (exit_code == core::kExitOk) return Next::kDone;
  if (exit_code == core::kExitUserError || exit_code == kCannotExecute ||
      exit_code == kNotExecutable || exit_code == core::kExitDiverged)
    return Next::kGiveUp;
  if (exit_code == core::kExitRequeue && stop_signalled) return Next::kGiveUp;
  return Next::kRestart;
}

double backoff_before(const RestartPolicy& policy, int restart) {
  return std::min(policy.max_backoff_seconds,
                  policy.backoff_seconds * std::pow(2.0, std::max(0, restart - 1)));
}

std::string run_dir_of(const std::vector<std::string>& command) {
  std::string dir;
  for (const auto& arg : command)
    if (arg.rfind("run.dir=", 0) == 0) dir = arg.substr(8);
  if (dir.empty())
    throw core::UserError(
        "run: the command has no run.dir=DIR argument; a restart could only resume the run "
        "it names (add run.dir=runs/<name> to the gradshare train arguments)");
  return dir;
}

int run_command(const std::vector<std::string>& args) {
  RestartPolicy policy;
  std::vector<std::string> command;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--") {
      command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (i + 1 >= args.size()) throw core::UserError("run: " + flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--max-restarts") policy.max_restarts = parse_count(flag, value);
    else if (flag == "--backoff") policy.backoff_seconds = parse_seconds(flag, value);
    else if (flag == "--max-backoff") policy.max_backoff_seconds = parse_seconds(flag, value);
    else if (flag == "--hang-seconds") policy.hang_seconds = parse_seconds(flag, value);
    else throw core::UserError("run: unknown option '" + flag + "' (see gradshare run --help)");
  }
  if (command.empty()) throw core::UserError("run: no command after -- (see gradshare run --help)");
  const std::string run_dir = run_dir_of(command);

  core::Logger::instance().set_tag("gradshare run");
  forward_stop_signals();
  for (int restart = 0;; ++restart) {
    core::log_info("attempt " + std::to_string(restart + 1) + " of " +
                   std::to_string(policy.max_restarts + 1) + ": " + joined(command));
    const std::time_t attempt_start = std::time(nullptr);
    const std::uintmax_t metrics_before = metrics_size(run_dir);
    const ChildEnd end = run_child(command, policy.hang_seconds);
    int code = end.code;
    if (end.hung)
      core::log_warn(command[0] + " did not exit " + std::to_string(policy.hang_seconds) +
                     " s after every process it started had ended: killed it (a launcher hang)");
    const AttemptRecords records = read_attempt_records(run_dir, metrics_before);
    const auto& recorded = records.exit_code;
    if (code > kKilledBySignal && recorded && *recorded != code) {
      core::log_warn(command[0] + " was ended by signal " + std::to_string(code - kKilledBySignal) +
                     " after the job's master had ended with " + std::to_string(*recorded) +
                     " (a launcher crash in its teardown): taking " + std::to_string(*recorded));
      code = *recorded;
    }
    if (code == core::kExitOk && !records.final) {
      // Under `mpirun --with-ft ulfm` a rank killed by a signal does not fail the job: a master
      // killed after its workers finished leaves mpirun with 0 and no model.h5.
      core::log_warn(command[0] + " exited with 0 but the run wrote no final record in " +
                     run_dir + "/metrics.jsonl (a rank killed at the end?): a crash");
      code = core::kExitRuntimeFailure;
    }
    const Next next = decide(code, stop_signal_received());
    if (next == Next::kDone) {
      core::log_info("the job finished after " + std::to_string(restart) + " restart(s)");
      return code;
    }
    if (next == Next::kGiveUp) {
      core::log_warn("the job ended with exit code " + std::to_string(code) +
                     (code == core::kExitRequeue ? " after the stop signal: requeue it"
                                                 : ", which a restart would not change"));
      return code == kCannotExecute || code == kNotExecutable ? core::kExitUserError : code;
    }
    if (restart >= policy.max_restarts) {
      core::log_error("the job ended with exit code " + std::to_string(code) +
                      " and no restart is left (--max-restarts " +
                      std::to_string(policy.max_restarts) + ")");
      return code;
    }
    const double backoff = backoff_before(policy, restart + 1);
    char line[160];
    std::snprintf(line, sizeof line,
                  "the job ended with exit code %d: restart %d of %d in %.1f s, resuming %s", code,
                  restart + 1, policy.max_restarts, backoff, run_dir.c_str());
    core::log_warn(line);
    remove_lock_of_attempt(run_dir, attempt_start);
    record_restart(run_dir, restart + 1, code, backoff);
    if (!sleep_unless_stopped(backoff)) {
      core::log_warn("stop signal during the back-off: not restarting (exit " +
                     std::to_string(core::kExitRequeue) + ")");
      return core::kExitRequeue;
    }
  }
}

}  // namespace gradshare::supervise
