// early_stopping.h: early stopping on an epoch-end figure (early_stopping.* in the config).
//
// After every epoch the master's EpochReporter hands over the figure it evaluated: accuracy or
// loss on the validation split (data.validation_fraction > 0), else on the test set. A figure
// better than the best so far by more than min_delta is the new best (the reporter writes
// best.h5). Once `patience` epochs have passed since the best epoch without a new best, the
// verdict is stop: the strategy ends training the way its last epoch would (model.h5 written,
// exit code 0). Epochs are counted by their numbers, so a resumed run that restores the best
// (from best.h5) goes on counting where the interrupted one was. The last epoch never asks for
// a stop: there is nothing left to skip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/experiment_config.h"

namespace gradshare::runtime {

class EarlyStopping {
 public:
  // epochs: training.epochs of the run.
  EarlyStopping(const config::EarlyStoppingConfig& config, std::int64_t epochs);

  bool enabled() const { return config_.metric != "none"; }
  // "accuracy" or "loss"; accuracy improves upwards, loss downwards.
  const std::string& metric() const { return config_.metric; }

  struct Verdict {
    bool improved = false;  // epoch `epoch` is the new best
    bool stop = false;      // patience ran out: end training now
  };
  // The figure of `epoch` (1-based). Only while enabled.
  Verdict observe(std::int64_t epoch, double value);
  // A resumed run: the best epoch and its figure, as best.h5 holds them.
  void restore(std::int64_t best_epoch, double best_value);

  std::optional<std::int64_t> best_epoch() const { return best_epoch_; }
  double best_value() const { return best_value_; }

 private:
  bool better(double value) const;

  config::EarlyStoppingConfig config_;
  std::int64_t epochs_;
  std::optional<std::int64_t> best_epoch_;
  double best_value_ = 0;
};

}  // namespace gradshare::runtime
