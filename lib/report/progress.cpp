#include "report/progress.h"

#include <cmath>
#include <cstdio>

namespace gradshare::report {

ProgressMeter::ProgressMeter(std::int64_t total_steps, std::int64_t first_step)
    : total_steps_(total_steps), first_step_(first_step) {}

void ProgressMeter::record(double loss, std::int64_t correct, std::int64_t samples) {
  loss_sum_ += loss;
  ++steps_;
  correct_ += correct;
  samples_ += samples;
}

double ProgressMeter::samples_per_second() const {
  const double seconds = window_clock_.seconds();
  return seconds > 0 ? static_cast<double>(samples_) / seconds : 0.0;
}

double ProgressMeter::eta_seconds(std::int64_t step) const {
  const std::int64_t done = step - first_step_;
  if (done <= 0) return 0.0;
  return run_clock_.seconds() / static_cast<double>(done) * static_cast<double>(total_steps_ - step);
}

void ProgressMeter::reset_window() {
  loss_sum_ = 0;
  steps_ = 0;
  correct_ = 0;
  samples_ = 0;
  window_clock_.restart();
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const auto total = static_cast<long long>(seconds + 0.5);
  char buffer[32];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", total / 3600, (total / 60) % 60);
  } else if (total >= 60) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", total / 60, total % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%llds", total);
  }
  return buffer;
}

std::string ProgressMeter::report(std::int64_t epoch, std::int64_t epochs, std::int64_t step_in_epoch,
                                  std::int64_t steps_per_epoch, std::int64_t step,
                                  double learning_rate) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer,
                "epoch %lld/%lld  step %lld/%lld  loss %.4f  acc %.1f%%  %.0f samples/s  lr %.2e  "
                "ETA %s",
                static_cast<long long>(epoch), static_cast<long long>(epochs),
                static_cast<long long>(step_in_epoch), static_cast<long long>(steps_per_epoch),
                mean_loss(), 100.0 * accuracy(), samples_per_second(), learning_rate,
                format_duration(eta_seconds(step)).c_str());
  reset_window();
  return buffer;
}

}  // namespace gradshare::report
