// recovery_report.h: what the gradient-sharing master tells about each recovery from a process
// failure (a log line and a "recovery" record in metrics.jsonl) and about all of them at the
// end ("recovery_summary": count, recovery time median and max, minibatches trained twice).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ft/repaired_ranks.h"
#include "report/metrics_log.h"

namespace gradshare::ft {

// Its ranks are the repair's: `RecoveryRecord record{repair};`.
struct RecoveryRecord : RepairedRanks {
  int tree_version = 0;
  double seconds = 0;         // from the master seeing the failure to training going on
  std::int64_t retrained_minibatches = 0;  // of dead workers' partitions, already shared
  std::int64_t resync_updates = 0;         // updates handed around by the resync
  int resync_whole_states = 0;  // replicas given a whole state (updates no longer kept)
  // Workers still starting up when the repair came (not yet training): they start from the
  // master's model, as a replacement does.
  int late_starts = 0;
  // A synchronous strategy's recovery (no tree, no update resync): how the workers resumed,
  // which the line gives instead of the figures above.
  std::string resumed_from{};
};

class RecoveryLog {
 public:
  explicit RecoveryLog(report::MetricsLog& metrics) : metrics_(metrics) {}
  void add(const RecoveryRecord& record);
  // The end-of-run line and record (nothing when no failure happened).
  void summarize() const;

 private:
  report::MetricsLog& metrics_;
  std::vector<RecoveryRecord> records_;
};

}  // namespace gradshare::ft
