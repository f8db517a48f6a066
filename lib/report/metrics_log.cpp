#include "report/metrics_log.h"

#include <cmath>
#include <cstdio>

#include "core/errors.h"

namespace gradshare::report {

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void JsonLine::key(const std::string& name) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + json_escape(name) + "\":";
}

JsonLine& JsonLine::add(const std::string& name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    body_ += buffer;
  }
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, std::int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, const std::string& value) {
  key(name);
  body_ += "\"" + json_escape(value) + "\"";
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, bool value) {
  key(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::add_raw(const std::string& name, const std::string& json) {
  key(name);
  body_ += json;
  return *this;
}

MetricsLog::MetricsLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {
  if (!file_) throw core::RuntimeError(path + ": cannot open metrics file for appending");
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const JsonLine& line) {
  if (!file_) return;
  JsonLine stamped = line;
  const std::string text = stamped.add("t", clock_.seconds()).str() + "\n";
  // One fwrite per record: stdio locks the stream, so lines from two threads never mix.
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace gradshare::report
