#include "runtime/divergence_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/log.h"
#include "runtime/checkpointer.h"

namespace gradshare::runtime {

namespace {
// Weight of the newest step in the moving average. 0.1 follows an explosion within a few steps
// (a worker of gradient sharing at 50x the shipped MLP's learning rate sees minibatch losses of
// 50-275 for 3-5 steps before its loss falls back to a poor plateau; at 0.05 the average peaked
// at 6-17, under the 23 of 10x guessing, and no rollback followed) while one minibatch still
// needs a loss about 90 times the running minimum to raise the alarm alone.
constexpr double kSmoothing = 0.1;
// The running minimum is never taken below this fraction of ln(classes): a loss that small is a
// converged model, not a baseline for explosions (on separable data a worker's smoothed loss
// moved from 3e-5 to 1.5e-3, 47 times, and nothing was wrong). An explosion still goes past
// guessing's loss, far above the factor times this floor.
constexpr double kConvergedFraction = 0.01;
}  // namespace

DivergenceGuard::DivergenceGuard(const config::TrainingConfig& training,
                                 std::int64_t num_classes)
    : factor_(training.divergence_factor),
      chance_loss_(std::log(static_cast<double>(std::max<std::int64_t>(num_classes, 2)))),
      minimum_(chance_loss_) {}

std::optional<std::string> DivergenceGuard::check(std::int64_t step, double loss) {
  char text[200];
  if (!std::isfinite(loss)) {
    std::snprintf(text, sizeof text, "the training loss at step %lld is %s",
                  static_cast<long long>(step), std::isnan(loss) ? "NaN" : "infinite");
    return std::string(text);
  }
  smoothed_ = seen_ == 0 ? loss : (1 - kSmoothing) * smoothed_ + kSmoothing * loss;
  ++seen_;
  minimum_ = std::max(std::min(minimum_, smoothed_), kConvergedFraction * chance_loss_);
  if (factor_ > 0 && smoothed_ > factor_ * minimum_) {
    std::snprintf(text, sizeof text,
                  "the smoothed training loss at step %lld is %.4g, over %.4g times %s %.4g "
                  "(training.divergence_factor)",
                  static_cast<long long>(step), smoothed_, factor_,
                  minimum_ == chance_loss_ ? "the loss of guessing, ln(classes) ="
                                           : "its running minimum",
                  minimum_);
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

}  // namespace gradshare::runtime
