// recovery_report.cpp: RecoveryLog (see recovery_report.h).
#include "ft/recovery_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/log.h"

namespace gradshare::ft {

namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  return "[" + text + "]";
}

}  // namespace

void RecoveryLog::add(const RecoveryRecord& record) {
  records_.push_back(record);
  char line[512];
  const int head = std::snprintf(
      line, sizeof line, "recovered in %.3f s: lost ranks %s, replaced %s, %d repair round%s",
      record.seconds, rank_list(record.lost).c_str(), rank_list(record.replaced).c_str(),
      record.rounds, record.rounds == 1 ? "" : "s");
  if (!record.resumed_from.empty())
    std::snprintf(line + head, sizeof line - static_cast<std::size_t>(head), "; %s",
                  record.resumed_from.c_str());
  else
    std::snprintf(line + head, sizeof line - static_cast<std::size_t>(head),
                  ", tree version %d, %lld updates resynced, %d whole replica states sent, %lld "
                  "minibatches will be trained again",
                  record.tree_version, static_cast<long long>(record.resync_updates),
                  record.resync_whole_states, static_cast<long long>(record.retrained_minibatches));
  std::string text = line;
  if (record.late_starts > 0)
    text += "; " + std::to_string(record.late_starts) +
            " workers still starting up began from the master's model";
  core::log_warn(text);
  metrics_.write(report::JsonLine()
                             .add("kind", "recovery")
                             .add("lost", rank_list(record.lost))
                             .add("replaced", rank_list(record.replaced))
                             .add("rounds", record.rounds)
                             .add("tree_version", record.tree_version)
                             .add("seconds", record.seconds)
                             .add("resync_updates", record.resync_updates)
                             .add("resync_whole_states", record.resync_whole_states)
                             .add("late_starts", record.late_starts)
                             .add("retrained_minibatches", record.retrained_minibatches));
}

void RecoveryLog::summarize() const {
  if (records_.empty()) return;
  std::vector<double> seconds;
  std::int64_t retrained = 0;
  std::size_t lost = 0;
  for (const auto& record : records_) {
    seconds.push_back(record.seconds);
    retrained += record.retrained_minibatches;
    lost += record.lost.size();
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds.size() % 2 ? seconds[seconds.size() / 2]
                                            : 0.5 * (seconds[seconds.size() / 2 - 1] + seconds[seconds.size() / 2]);
  char line[256];
  const int head = std::snprintf(line, sizeof line,
                                 "recovery summary: %zu recoveries, %zu processes lost, recovery "
                                 "time median %.3f s max %.3f s",
                                 records_.size(), lost, median, seconds.back());
  if (records_.front().resumed_from.empty())  // gradient sharing counts them
    std::snprintf(line + head, sizeof line - static_cast<std::size_t>(head),
                  ", %lld minibatches trained twice", static_cast<long long>(retrained));
  core::log_info(line);
  metrics_.write(report::JsonLine()
                             .add("kind", "recovery_summary")
                             .add("recoveries", records_.size())
                             .add("lost", lost)
                             .add("median_seconds", median)
                             .add("max_seconds", seconds.back())
                             .add("retrained_minibatches", retrained));
}

}  // namespace gradshare::ft
