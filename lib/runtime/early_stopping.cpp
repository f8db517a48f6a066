#include "runtime/early_stopping.h"

#include <cmath>

namespace gradshare::runtime {

EarlyStopping::EarlyStopping(const config::EarlyStoppingConfig& config, std::int64_t epochs)
    : config_(config), epochs_(epochs) {}

bool EarlyStopping::better(double value) const {
  if (!best_epoch_) return std::isfinite(value);
  return config_.metric == "loss" ? value < best_value_ - config_.min_delta
                                  : value > best_value_ + config_.min_delta;
}

EarlyStopping::Verdict EarlyStopping::observe(std::int64_t epoch, double value) {
  Verdict verdict;
  if (better(value)) {
    best_epoch_ = epoch;
    best_value_ = value;
    verdict.improved = true;
    return verdict;
  }
  const std::int64_t since = best_epoch_ ? epoch - *best_epoch_ : epoch;
  verdict.stop = since >= config_.patience && epoch < epochs_;
  return verdict;
}

void EarlyStopping::restore(std::int64_t best_epoch, double best_value) {
  best_epoch_ = best_epoch;
  best_value_ = best_value;
}

}  // namespace gradshare::runtime
