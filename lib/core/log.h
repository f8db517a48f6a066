// log.h: levelled logging to a stream (the master's terminal) and/or a file (workers' rank logs).
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace gradshare::core {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug" | "info" | "warn" | "error"; throws UserError otherwise.
LogLevel parse_log_level(std::string_view text);

class Logger {
 public:
  // Process-wide logger; by default info and above to stderr.
  static Logger& instance();

  void set_level(LogLevel level) { level_ = level; }
  LogLevel level() const { return level_; }
  // Prefix every line with this tag (e.g. "rank 3").
  void set_tag(std::string tag) { tag_ = std::move(tag); }
  // Also (or only) write to a file; an empty path closes it.
  void open_file(const std::string& path);
  void set_terminal(bool enabled) { terminal_ = enabled; }

  void write(LogLevel level, std::string_view message);
  // Progress lines (info level): at most one every `seconds` (0: every one) goes to the terminal
  // and the log file; the others are dropped here (their figures are in metrics.jsonl). On a
  // terminal the line is redrawn in place until another line is logged.
  void set_progress_interval(double seconds) { progress_interval_ = seconds; }
  void write_progress(std::string_view message);
  bool enabled(LogLevel level) const { return level >= level_; }

  ~Logger();

 private:
  Logger();
  std::string stamped(LogLevel level, std::string_view message) const;
  // Ends a progress line left on the terminal so that the next output starts on a new line.
  void end_status_line();

  LogLevel level_ = LogLevel::kInfo;
  std::string tag_;
  bool terminal_ = true;
  std::FILE* file_ = nullptr;
  bool stderr_is_terminal_;
  bool status_line_shown_ = false;
  double progress_interval_ = 0;
  std::chrono::steady_clock::time_point last_progress_{};
  bool progress_written_ = false;
  std::mutex mutex_;
};

void log_debug(std::string_view message);
void log_info(std::string_view message);
void log_warn(std::string_view message);
void log_error(std::string_view message);
void log_progress(std::string_view message);

}  // namespace gradshare::core
