// progress_window.h: the master's view of the workers' periodic reports, shared by the
// asynchronous and averaging strategies: totals, the window since the last progress line, when
// the next line is due, and the figures every progress line starts with.
// Report: steps, samples, loss_sum (sum of per-step mean losses), correct, seconds (the
// worker's own wall time the figures cover) and add(const Report&).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/timer.h"
#include "report/metrics_log.h"
#include "report/progress.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

inline double ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0.0;
}

template <typename Report>
class ProgressWindow {
 public:
  // workers: ranks that train; first_step: steps done before this run (a resumed run
  // continues the count).
  ProgressWindow(const RunContext& context, std::int64_t steps_per_epoch, int workers,
                 std::int64_t first_step = 0)
      : context_(context),
        workers_(workers),
        steps_per_epoch_(std::max<std::int64_t>(steps_per_epoch, 1)),
        total_steps_(steps_per_epoch_ * context.config.training.epochs),
        first_step_(first_step),
        next_log_step_(first_step + 1) {}

  void add(const Report& report) {
    window_.add(report);
    total_.add(report);
  }
  const Report& total() const { return total_; }
  const Report& window() const { return window_; }
  // Steps of the whole run, those before a resume included.
  std::int64_t step() const { return first_step_ + total_.steps; }

  // True once the run has passed the next multiple of logging.every_steps (then moves it on).
  bool due() {
    const auto every = context_.config.logging.every_steps;
    if (step() < next_log_step_) return false;
    next_log_step_ = (step() / every + 1) * every;
    return true;
  }

  double loss() const { return ratio(window_.loss_sum, static_cast<double>(window_.steps)); }
  double accuracy() const {
    return ratio(static_cast<double>(window_.correct), static_cast<double>(window_.samples));
  }
  // Workers run side by side: W times one worker's rate. Each report carries its own time, so
  // reports that arrive together do not distort it.
  double samples_per_second() const {
    return workers_ * ratio(static_cast<double>(window_.samples), window_.seconds);
  }
  double wall_seconds() const { return run_clock_.seconds(); }

  // "epoch 3/15  step 2800/14070  loss 0.3412  acc 87.6%  41000 samples/s"
  std::string head() const {
    char text[160];
    std::snprintf(text, sizeof text,
                  "epoch %lld/%lld  step %lld/%lld  loss %.4f  acc %.1f%%  %.0f samples/s",
                  static_cast<long long>(std::min<std::int64_t>(
                      step() / steps_per_epoch_ + 1, context_.config.training.epochs)),
                  static_cast<long long>(context_.config.training.epochs),
                  static_cast<long long>(step()), static_cast<long long>(total_steps_), loss(),
                  100.0 * accuracy(), samples_per_second());
    return text;
  }
  // "ETA 1m12s" at this run's average rate.
  std::string eta() const {
    const double seconds = ratio(run_clock_.seconds(), static_cast<double>(total_.steps)) *
                           static_cast<double>(total_steps_ - step());
    return "ETA " + report::format_duration(seconds);
  }
  // The "step" metrics record's common fields.
  report::JsonLine record() const {
    return report::JsonLine()
        .add("kind", "step")
        .add("step", step())
        .add("loss", loss())
        .add("train_accuracy", accuracy())
        .add("samples_per_second", samples_per_second())
        .add("wall_seconds", wall_seconds());
  }
  void next_window() { window_ = Report{}; }

 private:
  const RunContext& context_;
  int workers_;
  std::int64_t steps_per_epoch_;
  std::int64_t total_steps_;
  std::int64_t first_step_;
  std::int64_t next_log_step_;
  Report window_;
  Report total_;
  core::Stopwatch run_clock_;
};

}  // namespace gradshare::runtime
