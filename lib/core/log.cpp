#include "core/log.h"

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

Logger::~Logger() {
  if (file_) std::fclose(file_);
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

void Logger::write(LogLevel level, std::string_view message) {
  if (!enabled(level)) return;
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
  std::lock_guard lock(mutex_);
  if (terminal_) {
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  if (file_) {
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }
}

void log_debug(std::string_view message) { Logger::instance().write(LogLevel::kDebug, message); }
void log_info(std::string_view message) { Logger::instance().write(LogLevel::kInfo, message); }
void log_warn(std::string_view message) { Logger::instance().write(LogLevel::kWarn, message); }
void log_error(std::string_view message) { Logger::instance().write(LogLevel::kError, message); }

}  // namespace gradshare::core
