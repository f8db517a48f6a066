// run_data.cpp: RunData::load and the views of a run's records (see run_data.h).
#include "report/run_data.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/errors.h"

namespace gradshare::report {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Dotted key -> scalar for every scalar of a YAML tree (sequence elements as key.0, key.1, ...).
void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (node.IsScalar()) {
    out[prefix] = node.Scalar();
  } else if (node.IsMap()) {
    for (const auto& item : node)
      flatten(item.second, prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar(), out);
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) flatten(node[i], prefix + "." + std::to_string(i), out);
  }
}

Record parse_line(const std::string& text, const std::string& file, int line) {
  const std::string where = file + ":" + std::to_string(line) + ": ";
  JsonValue value;
  try {
    value = parse_json(text);
  } catch (const JsonError& error) {
    throw core::UserError(where + "malformed JSON at column " + std::to_string(error.column()) +
                          ": " + error.what());
  }
  if (!value.is_object()) throw core::UserError(where + "not a JSON object");
  auto kind = value.string_at("kind");
  if (!kind) throw core::UserError(where + "record without a \"kind\"");
  Record record;
  record.kind = std::move(*kind);
  record.fields = std::move(value);
  record.line = line;
  return record;
}

// Sessions and the common time axis (run_data.h). With "t", a session starts where "t" falls
// back; in older files, at a "resume" record.
void place_in_time(std::vector<Record>& records) {
  const bool stamped = std::any_of(records.begin(), records.end(),
                                   [](const Record& r) { return r.fields.number_at("t").has_value(); });
  int session = 0;
  double offset = 0;         // where the current session starts on the axis
  double session_end = 0;    // latest time of the current session
  bool timed = false;  // the current session has had a record with a clock
  double previous = 0;  // that record's clock
  for (auto& record : records) {
    const auto clock = record.fields.number_at(stamped ? "t" : "wall_seconds");
    const bool next = timed && (stamped ? clock && *clock < previous : record.kind == "resume");
    if (next) {
      ++session;
      offset = session_end;
      timed = false;
    }
    record.session = session;
    if (clock) {
      record.time = offset + *clock;
      session_end = std::max(session_end, *record.time);
      previous = *clock;
      timed = true;
    }
  }
}

std::map<int, RankLog> read_rank_logs(const fs::path& directory) {
  std::map<int, RankLog> logs;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    // rank-<r>.log
    const std::string name = entry.path().filename().string();
    const std::string digits = name.size() > 9 ? name.substr(5, name.size() - 9) : "";
    if (name.rfind("rank-", 0) != 0 || entry.path().extension() != ".log" || digits.empty() ||
        digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const int rank = std::stoi(digits);
    RankLog log;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      ++log.lines;
      if (line.find(" WARN ") != std::string::npos) ++log.warnings;
      if (line.find(" ERROR ") != std::string::npos) ++log.errors;
    }
    logs[rank] = log;
  }
  return logs;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace

RunData RunData::load(const std::string& directory) {
  const fs::path path(directory);
  std::error_code error;
  if (!fs::is_directory(path, error))
    throw core::UserError(directory + ": no such run directory");
  const fs::path metrics = path / "metrics.jsonl";
  if (!fs::is_regular_file(metrics, error))
    throw core::UserError(metrics.string() + ": not found (is " + directory +
                          " a gradshare run directory?)");
  std::ifstream in(metrics, std::ios::binary);
  if (!in) throw core::UserError(metrics.string() + ": cannot be read");

  RunData run;
  run.directory_ = directory;
  run.name_ = path.lexically_normal().filename().string();
  if (run.name_.empty()) run.name_ = path.lexically_normal().parent_path().filename().string();
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    run.records_.push_back(parse_line(line, metrics.string(), line_number));
  }
  place_in_time(run.records_);

  const fs::path config = path / "config.yaml";
  if (fs::is_regular_file(config, error)) {
    run.config_text_ = read_text(config);
    try {
      flatten(YAML::Load(run.config_text_), "", run.config_scalars_);
    } catch (const YAML::Exception&) {
      run.config_scalars_.clear();  // shown as text only
    }
  }
  run.rank_logs_ = read_rank_logs(path);
  return run;
}

std::string RunData::config_value(std::string_view dotted_key) const {
  const auto found = config_scalars_.find(std::string(dotted_key));
  return found == config_scalars_.end() ? std::string() : found->second;
}

std::vector<const Record*> RunData::of_kind(std::string_view kind) const {
  std::vector<const Record*> out;
  for (const auto& record : records_)
    if (record.kind == kind) out.push_back(&record);
  return out;
}

std::vector<Point> RunData::series(std::string_view kind, std::string_view field, Axis axis,
                                   std::optional<int> rank) const {
  std::vector<Point> points;
  for (const auto& record : records_) {
    if (record.kind != kind) continue;
    if (rank && record.fields.number_at("rank") != static_cast<double>(*rank)) continue;
    const auto y = record.fields.number_at(field);
    const auto x = axis == Axis::kTime ? record.time : record.fields.number_at("step");
    if (y && x) points.push_back({*x, *y});
  }
  return points;
}

std::vector<Event> RunData::events() const {
  std::vector<Event> events;
  const auto add = [&](const Record& record, std::string kind, std::string detail) {
    if (!record.time) return;
    events.push_back({std::move(kind), *record.time, record.fields.number_at("step"), std::move(detail)});
  };
  for (const auto& record : records_) {
    const auto& f = record.fields;
    if (record.kind == "checkpoint") {
      add(record, "checkpoint",
          f.string_at("file").value_or("") + format(", %.2f MB", f.number_at("bytes").value_or(0) / 1e6) +
              format(", written in %.3f s", f.number_at("seconds").value_or(0)));
    } else if (record.kind == "recovery") {
      add(record, "recovery",
          "lost ranks " + f.string_at("lost").value_or("?") + ", replaced by " +
              f.string_at("replaced").value_or("?") +
              format(", recovered in %.3f s", f.number_at("seconds").value_or(0)) +
              format(", %.0f minibatches trained again", f.number_at("retrained_minibatches").value_or(0)));
    } else if (record.kind == "resize") {
      add(record, "resize",
          format("%.0f", f.number_at("checkpoint_ranks").value_or(0)) + " -> " +
              format("%.0f ranks: ", f.number_at("ranks").value_or(0)) + f.string_at("how").value_or(""));
    } else if (record.kind == "resume") {
      add(record, "resume",
          "from " + fs::path(f.string_at("checkpoint").value_or("?")).filename().string() +
              format(", epoch %.0f", f.number_at("epoch").value_or(0)));
    } else if (record.kind == "restart") {
      add(record, "restart",
          format("restart %.0f by gradshare run", f.number_at("restart").value_or(0)) +
              format(" after exit code %.0f", f.number_at("exit_code").value_or(0)) +
              format(", back-off %.1f s", f.number_at("backoff_seconds").value_or(0)));
    } else if (record.kind == "early_stop") {
      add(record, "early stop",
          format("after epoch %.0f: ", f.number_at("epoch").value_or(0)) +
              f.string_at("reason").value_or(""));
    }
  }
  // A session without a "final" record stopped early: a stop signal, a failure or a kill (or
  // the run is still going, for the last one); its "exit" record, when the master wrote one,
  // says how.
  const int sessions = records_.empty() ? 0 : records_.back().session + 1;
  for (int s = 0; s < sessions; ++s) {
    bool final_seen = false;
    const Record* last = nullptr;
    std::optional<double> exit_code;
    for (const auto& record : records_) {
      if (record.session != s) continue;
      final_seen = final_seen || record.kind == "final";
      if (record.kind == "exit") exit_code = record.fields.number_at("exit_code");
      if (record.time) last = &record;
    }
    if (final_seen || !last) continue;
    std::string how = "ended without a final record (stopped, failed, or still running)";
    if (exit_code == core::kExitRequeue)
      how = "stopped after its checkpoint (exit code 75: requeue)";
    else if (exit_code == core::kExitDiverged) how = "ended by the divergence guard (exit code 3)";
    else if (exit_code) how = format("ended with exit code %.0f", *exit_code);
    add(*last, "stop", how + (s + 1 < sessions ? "; the next session resumed" : ""));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  return events;
}

std::vector<int> RunData::worker_ranks() const {
  std::set<int> ranks;
  for (const auto& [rank, log] : rank_logs_)
    if (rank > 0) ranks.insert(rank);
  for (const auto& record : records_) {
    if (record.kind != "encoding_debug" && record.kind != "worker_staleness") continue;
    if (const auto rank = record.fields.number_at("rank"); rank && *rank > 0)
      ranks.insert(static_cast<int>(*rank));
  }
  return {ranks.begin(), ranks.end()};
}

}  // namespace gradshare::report
