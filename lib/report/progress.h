// report/progress.h: the step log line and its throughput/ETA arithmetic.
//   epoch 2/15  step 400/938  loss 0.3812  acc 86.1%  21450 samples/s  lr 1.00e-03  ETA 1m12s
#pragma once

#include <cstdint>
#include <string>

#include "core/timer.h"

namespace gradshare::report {

class ProgressMeter {
 public:
  // total_steps: over the whole run, for the ETA.
  ProgressMeter(std::int64_t total_steps, std::int64_t first_step = 0);

  // Accumulates one step's figures.
  void record(double loss, std::int64_t correct, std::int64_t samples);
  // Samples per second since the last report().
  double samples_per_second() const;
  double mean_loss() const { return samples_ ? loss_sum_ / static_cast<double>(steps_) : 0.0; }
  double accuracy() const {
    return samples_ ? static_cast<double>(correct_) / static_cast<double>(samples_) : 0.0;
  }
  // Seconds left at the average rate of the run so far.
  double eta_seconds(std::int64_t step) const;
  // Builds the log line for `step` (1-based within the run) and starts a new window.
  std::string report(std::int64_t epoch, std::int64_t epochs, std::int64_t step_in_epoch,
                     std::int64_t steps_per_epoch, std::int64_t step, double learning_rate);
  void reset_window();

 private:
  std::int64_t total_steps_;
  std::int64_t first_step_;
  core::Stopwatch run_clock_;
  core::Stopwatch window_clock_;
  double loss_sum_ = 0;
  std::int64_t steps_ = 0;
  std::int64_t correct_ = 0;
  std::int64_t samples_ = 0;
};

std::string format_duration(double seconds);

}  // namespace gradshare::report
