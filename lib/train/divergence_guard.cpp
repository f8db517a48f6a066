#include "train/divergence_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/log.h"
#include "train/checkpointer.h"

namespace gradshare::train {

namespace {
constexpr double kSmoothing = 0.05;  // weight of the newest step in the moving average
}  // namespace

DivergenceGuard::DivergenceGuard(const config::TrainingConfig& training)
    : factor_(training.divergence_factor) {}

std::optional<std::string> DivergenceGuard::check(std::int64_t step, double loss) {
  char text[200];
  if (!std::isfinite(loss)) {
    std::snprintf(text, sizeof text, "the training loss at step %lld is %s",
                  static_cast<long long>(step), std::isnan(loss) ? "NaN" : "infinite");
    return std::string(text);
  }
  smoothed_ = seen_ == 0 ? loss : (1 - kSmoothing) * smoothed_ + kSmoothing * loss;
  ++seen_;
  if (seen_ <= kWarmupSteps) {
    minimum_ = seen_ == 1 ? smoothed_ : std::min(minimum_, smoothed_);
    return std::nullopt;
  }
  minimum_ = std::min(minimum_, smoothed_);
  if (factor_ > 0 && smoothed_ > factor_ * minimum_) {
    std::snprintf(text, sizeof text,
                  "the smoothed training loss at step %lld is %.4g, over %.4g times its running "
                  "minimum %.4g (training.divergence_factor)",
                  static_cast<long long>(step), smoothed_, factor_, minimum_);
    return std::string(text);
  }
  return std::nullopt;
}

std::string learning_rate_cause(const RunContext& context) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", context.config.optimizer.learning_rate);
  return "optimizer.learning_rate " + std::string(rate) + " is too high";
}

void log_divergence(const RunContext& context, const std::string& where,
                    const std::string& cause) {
  const auto newest = newest_checkpoint(context.run_directory);
  core::log_error("training diverged " + where + "; likely cause: " +
                  (cause.empty() ? learning_rate_cause(context) : cause) + "; " +
                  (newest ? "newest good checkpoint kept: " + *newest
                          : std::string("no checkpoint was written before it")));
}

}  // namespace gradshare::train
