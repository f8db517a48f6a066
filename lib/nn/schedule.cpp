// schedule.cpp: learning-rate schedules with linear warm-up.
#include "nn/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/errors.h"

namespace gradshare::nn {

LearningRateSchedule::LearningRateSchedule(const config::OptimizerConfig& config,
                                           std::int64_t total_steps, std::int64_t steps_per_epoch)
    : base_(config.learning_rate),
      decay_rate_(config.decay_rate),
      decay_epochs_(config.decay_epochs),
      min_(config.min_learning_rate),
      warmup_(config.warmup_steps),
      total_(total_steps),
      steps_per_epoch_(steps_per_epoch) {
  GS_CHECK(total_steps >= 1 && steps_per_epoch >= 1, "schedule needs positive step counts");
  const std::string& name = config.schedule;
  if (name == "constant") {
    kind_ = Kind::kConstant;
  } else if (name == "step") {
    kind_ = Kind::kStep;
    if (decay_epochs_ <= 0.0)
      throw core::UserError("optimizer.decay_epochs: must be > 0 for the step schedule");
  } else if (name == "exponential") {
    kind_ = Kind::kExponential;
  } else if (name == "cosine") {
    kind_ = Kind::kCosine;
  } else {
    throw core::UserError("optimizer.schedule: unknown schedule '" + name +
                          "' (constant, step, exponential, cosine)");
  }
}

double LearningRateSchedule::at(std::int64_t step) const {
  step = std::max<std::int64_t>(step, 0);
  const double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch_);
  double lr = base_;
  switch (kind_) {
    case Kind::kConstant:
      break;
    case Kind::kStep:
      lr = base_ * std::pow(decay_rate_, std::floor(epoch / decay_epochs_));
      break;
    case Kind::kExponential:
      lr = base_ * std::pow(decay_rate_, std::floor(epoch));
      break;
    case Kind::kCosine: {
      const double span = static_cast<double>(std::max<std::int64_t>(total_ - warmup_, 1));
      const double progress = std::clamp(static_cast<double>(step - warmup_) / span, 0.0, 1.0);
      lr = min_ + (base_ - min_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      break;
    }
  }
  if (step < warmup_) lr *= static_cast<double>(step + 1) / static_cast<double>(warmup_);
  return lr;
}

}  // namespace gradshare::nn
