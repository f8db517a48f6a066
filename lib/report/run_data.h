// run_data.h: one run directory read for the report: the resolved config, every metrics.jsonl
// record in order on one time axis, the events (checkpoints, recoveries, resizes, resumes,
// stops) and the ranks that kept a log.
//
// Time: a record's "t" (seconds since its session opened metrics.jsonl), or "wall_seconds" in
// files written before records carried "t". A resumed run appends sessions to the same file;
// each session is placed after the previous one, so the axis runs on through the whole run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/json_value.h"

namespace gradshare::report {

struct Record {
  std::string kind;
  JsonValue fields;
  int line = 0;                 // in metrics.jsonl, 1-based
  int session = 0;              // 0 for the first session, +1 per resumed session
  std::optional<double> time;   // on the run's time axis (see above)
};

struct Point {
  double x = 0;
  double y = 0;
};

enum class Axis { kTime, kStep };

struct Event {
  std::string kind;  // checkpoint, recovery, resize, resume, restart, early stop, stop
  double time = 0;
  std::optional<double> step;
  std::string detail;
};

// What a rank's log says about it: lines, warnings and errors.
struct RankLog {
  int lines = 0;
  int warnings = 0;
  int errors = 0;
};

class RunData {
 public:
  // Reads DIRECTORY; core::UserError naming the directory, or metrics.jsonl and the line, when
  // it is missing or a line is not a JSON object with a "kind".
  static RunData load(const std::string& directory);

  const std::string& directory() const { return directory_; }
  // The directory's last path component.
  const std::string& name() const { return name_; }
  // config.yaml as written (empty when missing), and one scalar of it by dotted key ("" when
  // absent or unreadable).
  const std::string& config_text() const { return config_text_; }
  std::string config_value(std::string_view dotted_key) const;

  const std::vector<Record>& records() const { return records_; }
  // Records of one kind, in file order.
  std::vector<const Record*> of_kind(std::string_view kind) const;
  // `field` of the records of `kind` (of one rank, when given) against time or step; records
  // lacking the field (or holding null) or the axis value are left out.
  std::vector<Point> series(std::string_view kind, std::string_view field, Axis axis,
                            std::optional<int> rank = std::nullopt) const;
  std::vector<Event> events() const;
  // Ranks other than the master's that kept a log or appear in per-worker records, ascending.
  std::vector<int> worker_ranks() const;
  const std::map<int, RankLog>& rank_logs() const { return rank_logs_; }

 private:
  std::string directory_;
  std::string name_;
  std::string config_text_;
  std::map<std::string, std::string> config_scalars_;  // dotted key -> value
  std::vector<Record> records_;
  std::map<int, RankLog> rank_logs_;
};

}  // namespace gradshare::report
