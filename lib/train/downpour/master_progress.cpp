// downpour/master_progress.cpp: DownpourProgress (see master_progress.h).
#include "train/downpour/master_progress.h"

#include <cmath>
#include <cstdio>

#include "core/log.h"

namespace gradshare::train {

double mean_age(const DownpourReport& report) {
  return report.ages > 0 ? report.age_sum / static_cast<double>(report.ages) : NAN;
}

void DownpourProgress::maybe_log() {
  if (!window_.due()) return;
  const auto& w = window_.window();
  const double steps = static_cast<double>(w.steps);
  const double push_bytes = runtime::ratio(static_cast<double>(w.push_bytes), steps);
  const double pull_bytes = runtime::ratio(static_cast<double>(w.pull_bytes), steps);
  char line[448];
  std::snprintf(line, sizeof line,
                "%s  staleness mean %.1f max %lld  pushes %lld (postponed %lld)  pulls %lld "
                "(retried %lld)  %.0f B/worker/step (push %.0f + pull %.0f)  %s",
                window_.head().c_str(), w.ages ? mean_age(w) : 0.0,
                static_cast<long long>(w.age_max), static_cast<long long>(w.pushes),
                static_cast<long long>(w.busy_slots), static_cast<long long>(w.pulls),
                static_cast<long long>(w.pull_retries), push_bytes + pull_bytes, push_bytes,
                pull_bytes, window_.eta().c_str());
  core::log_progress(line);
  context_.metrics.write(window_.record()
                             .add("bytes_per_worker_step", push_bytes + pull_bytes)
                             .add("push_bytes_per_worker_step", push_bytes)
                             .add("pull_bytes_per_worker_step", pull_bytes)
                             .add("staleness_mean", mean_age(w))
                             .add("staleness_max", w.ages ? w.age_max : std::int64_t{0})
                             .add("pushes", w.pushes)
                             .add("pushes_postponed", w.busy_slots)
                             .add("pulls", w.pulls)
                             .add("pull_retries", w.pull_retries));
  window_.next_window();
}

}  // namespace gradshare::train
