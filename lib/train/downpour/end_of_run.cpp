// downpour/end_of_run.cpp: the Downpour master's end-of-run checks and summary.
#include "train/downpour/end_of_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/log.h"
#include "train/downpour/master_progress.h"
#include "runtime/progress_window.h"

namespace gradshare::train {

Comparison compare(std::span<const float> a, std::span<const float> b) {
  Comparison result;
  if (a.size() != b.size()) return {INFINITY, false};
  result.identical = std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    result.max_difference =
        std::max(result.max_difference, std::fabs(static_cast<double>(a[i]) - b[i]));
  return result;
}

Comparison least_alike(const std::map<int, DownpourFinalModel>& finals,
                       std::span<const float> parameters) {
  Comparison worst;
  for (const auto& [worker, final_model] : finals) {
    const Comparison c = compare(final_model.parameters, parameters);
    worst.identical = worst.identical && c.identical;
    worst.max_difference = std::max(worst.max_difference, c.max_difference);
  }
  return worst;
}

int mismatched_slots(const std::map<int, DownpourFinalModel>& finals,
                     const std::vector<std::vector<std::uint64_t>>& applied,
                     const DownpourLayout& layout) {
  int mismatched = 0;
  for (const auto& [worker, final_model] : finals)
    for (int s = 0; s < layout.servers(); ++s) {
      const auto posted = final_model.pushed.at(static_cast<std::size_t>(s));
      const auto done = applied.at(static_cast<std::size_t>(s))
                            .at(static_cast<std::size_t>(layout.worker_index(worker)));
      if (posted != done) {
        core::log_error("parameter server " + std::to_string(s) + " applied " +
                        std::to_string(done) + " pushes of worker rank " + std::to_string(worker) +
                        ", which posted " + std::to_string(posted));
        ++mismatched;
      }
    }
  return mismatched;
}

void summarize_downpour(runtime::RunContext& context, const DownpourReport& total,
                        const DownpourLayout& layout, std::size_t parameters,
                        const EndChecks& checks) {
  const Comparison& worst = checks.worst;
  char line[512];
  std::snprintf(line, sizeof line,
                "downpour consistency: after the last push and a final pull, %d workers hold "
                "the servers' parameters %s (max |difference| %.3e): %s",
                checks.workers_compared, worst.identical ? "bit for bit" : "NOT exactly",
                worst.max_difference, worst.identical ? "OK" : "FAILED");
  core::log_info(line);
  const int mismatched = checks.mismatched_slots;
  std::snprintf(line, sizeof line,
                "downpour pushes: every live worker's posted pushes applied exactly once on "
                "every shard (by seq): %s",
                mismatched == 0 ? "OK" : (std::to_string(mismatched) + " slots differ: FAILED").c_str());
  core::log_info(line);
  const double steps = static_cast<double>(total.steps);
  const double push_bytes = runtime::ratio(static_cast<double>(total.push_bytes), steps);
  const double pull_bytes = runtime::ratio(static_cast<double>(total.pull_bytes), steps);
  std::snprintf(line, sizeof line,
                "downpour summary: %lld steps, %lld pushes (%llu applied over %d shards, %lld "
                "postponed), %lld pulls (%lld retried), staleness mean %.2f max %lld, "
                "%.0f B/worker/step (push %.0f + pull %.0f)",
                static_cast<long long>(total.steps), static_cast<long long>(total.pushes),
                static_cast<unsigned long long>(checks.versions), layout.servers(),
                static_cast<long long>(total.busy_slots), static_cast<long long>(total.pulls),
                static_cast<long long>(total.pull_retries), total.ages ? mean_age(total) : 0.0,
                static_cast<long long>(total.age_max), push_bytes + pull_bytes, push_bytes,
                pull_bytes);
  core::log_info(line);
  context.metrics.write(
      report::JsonLine()
          .add("kind", "downpour_summary")
          .add("steps", total.steps)
          .add("servers", layout.servers())
          .add("workers", layout.workers())
          .add("encode", context.config.downpour.encode)
          .add("pushes", total.pushes)
          .add("pushes_applied", static_cast<std::int64_t>(checks.versions))
          .add("pushes_postponed", total.busy_slots)
          .add("pulls", total.pulls)
          .add("pull_retries", total.pull_retries)
          .add("staleness_mean", mean_age(total))
          .add("staleness_max", total.age_max)
          .add("acknowledged_pushes", total.ages)
          .add("bytes_per_worker_step", push_bytes + pull_bytes)
          .add("push_bytes_per_worker_step", push_bytes)
          .add("pull_bytes_per_worker_step", pull_bytes)
          .add("dense_bytes", static_cast<std::int64_t>(4 * parameters))
          .add("consistency_max_difference", worst.max_difference)
          .add("consistent", worst.identical)
          .add("pushes_applied_once", mismatched == 0));
}

}  // namespace gradshare::train
