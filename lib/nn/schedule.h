// schedule.h: the learning rate at a given step (0-based count of updates so far).
//   constant     lr0
//   step         lr0 * decay_rate ^ floor(epoch / decay_epochs)
//   exponential  lr0 * decay_rate ^ floor(epoch)
//   cosine       min + (lr0 - min) * (1 + cos(pi * p)) / 2, p = (step - warmup) / (total - warmup)
//                clamped to [0, 1]
// with epoch = step / steps_per_epoch (fractional). Linear warm-up multiplies any of them by
// (step + 1) / warmup_steps while step < warmup_steps.
#pragma once

#include <cstdint>
#include <string>

#include "config/experiment_config.h"

namespace gradshare::nn {

class LearningRateSchedule {
 public:
  // total_steps and steps_per_epoch must be >= 1. An unknown schedule, or a step schedule
  // with decay_epochs 0, throws UserError naming the key.
  LearningRateSchedule(const config::OptimizerConfig& config, std::int64_t total_steps,
                       std::int64_t steps_per_epoch);
  double at(std::int64_t step) const;

 private:
  enum class Kind { kConstant, kStep, kExponential, kCosine };
  Kind kind_;
  double base_, decay_rate_, decay_epochs_, min_;
  std::int64_t warmup_, total_, steps_per_epoch_;
};

}  // namespace gradshare::nn
