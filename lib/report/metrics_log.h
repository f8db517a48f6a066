// report/metrics_log.h: metrics.jsonl, one JSON object per line, written by the master.
//   MetricsLog log(path); log.write(JsonLine().add("kind", "step").add("loss", 0.3));
// Every record ends with "t": seconds since this process opened the file, one clock for all
// records of a session (a resumed run appends a session whose "t" starts again from 0).
#pragma once

#include <cstdint>
#include <cstdio>
#include <utility>
#include <string>

#include "core/timer.h"

namespace gradshare::report {

// Builds one flat JSON object; numbers are written with full precision, NaN/Inf as null.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, std::int64_t value);
  JsonLine& add(const std::string& key, int value) { return add(key, static_cast<std::int64_t>(value)); }
  JsonLine& add(const std::string& key, std::size_t value) {
    return add(key, static_cast<std::int64_t>(value));
  }
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, bool value);
  // A pre-formatted JSON value (array, object).
  JsonLine& add_raw(const std::string& key, const std::string& json);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& name);
  std::string body_;
};

std::string json_escape(const std::string& text);

class MetricsLog {
 public:
  MetricsLog() = default;
  explicit MetricsLog(const std::string& path);
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  MetricsLog(MetricsLog&& other) noexcept : file_(other.file_), clock_(other.clock_) {
    other.file_ = nullptr;
  }
  MetricsLog& operator=(MetricsLog&& other) noexcept {
    std::swap(file_, other.file_);
    std::swap(clock_, other.clock_);
    return *this;
  }
  ~MetricsLog();
  // Appends the record and its "t" as one line; safe from several threads.
  void write(const JsonLine& line);

 private:
  std::FILE* file_ = nullptr;
  core::Stopwatch clock_;
};

}  // namespace gradshare::report
