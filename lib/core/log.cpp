#include "core/log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include "core/errors.h"

namespace gradshare::core {

LogLevel parse_log_level(std::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  throw UserError("unknown log level '" + std::string(text) + "' (allowed: debug, info, warn, error)");
}

Logger& Logger::instance() {
  static Logger logger;
  return logger;
}

Logger::Logger() : stderr_is_terminal_(isatty(STDERR_FILENO) == 1) {}

Logger::~Logger() {
  end_status_line();
  if (file_) std::fclose(file_);
}

void Logger::end_status_line() {
  if (!status_line_shown_) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  status_line_shown_ = false;
}

void Logger::open_file(const std::string& path) {
  std::lock_guard lock(mutex_);
  if (file_) std::fclose(file_);
  file_ = nullptr;
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw RuntimeError("cannot open log file '" + path + "' for writing");
}

static const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

std::string Logger::stamped(LogLevel level, std::string_view message) const {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  std::string line = std::string(stamp) + " " + level_name(level) + " ";
  if (!tag_.empty()) line += "[" + tag_ + "] ";
  line.append(message);
  line += '\n';
  return line;
}

void Logger::write(LogLevel level, std::string_view message) {
  if (!enabled(level)) return;
  const std::string line = stamped(level, message);
  std::lock_guard lock(mutex_);
  if (terminal_) {
    end_status_line();
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  if (file_) {
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }
}

void Logger::write_progress(std::string_view message) {
  if (!enabled(LogLevel::kInfo)) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (progress_written_ &&
      std::chrono::duration<double>(now - last_progress_).count() < progress_interval_)
    return;  // most progress lines of a fast run end here, before any formatting
  progress_written_ = true;
  last_progress_ = now;
  std::string line = stamped(LogLevel::kInfo, message);
  if (terminal_ && stderr_is_terminal_) {
    line.pop_back();  // the line stays open: the next progress line overwrites it
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    status_line_shown_ = true;
  } else if (terminal_) {
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  if (file_) {
    if (line.back() != '\n') line += '\n';
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }
}

void log_debug(std::string_view message) { Logger::instance().write(LogLevel::kDebug, message); }
void log_info(std::string_view message) { Logger::instance().write(LogLevel::kInfo, message); }
void log_warn(std::string_view message) { Logger::instance().write(LogLevel::kWarn, message); }
void log_error(std::string_view message) { Logger::instance().write(LogLevel::kError, message); }
void log_progress(std::string_view message) { Logger::instance().write_progress(message); }

}  // namespace gradshare::core
