// threshold.cpp: the threshold algorithms of threshold.h.
#include "codec/threshold.h"

#include "core/errors.h"

namespace gradshare::codec {

AdaptiveThreshold::AdaptiveThreshold(double min_sparsity, double max_sparsity, double decay_rate)
    : min_sparsity_(min_sparsity), max_sparsity_(max_sparsity), decay_rate_(decay_rate) {}

double AdaptiveThreshold::next(double tau, double sparsity) const {
  if (sparsity < min_sparsity_) return tau * decay_rate_;
  if (sparsity > max_sparsity_) return tau / decay_rate_;
  return tau;
}

double FixedThreshold::next(double tau, double /*sparsity*/) const { return tau; }

std::unique_ptr<ThresholdAlgorithm> make_threshold_algorithm(const config::EncodingConfig& config) {
  const std::string& name = config.threshold_algorithm;
  if (!(config.decay_rate > 0.0 && config.decay_rate < 1.0)) {
    throw core::UserError("encoding.decay_rate " + std::to_string(config.decay_rate) +
                          " must lie strictly between 0 and 1");
  }
  if (name == "adaptive") {
    if (config.min_sparsity > config.max_sparsity) {
      throw core::UserError("encoding.min_sparsity (" + std::to_string(config.min_sparsity) +
                            ") must not exceed encoding.max_sparsity (" +
                            std::to_string(config.max_sparsity) + ")");
    }
    return std::make_unique<AdaptiveThreshold>(config.min_sparsity, config.max_sparsity,
                                               config.decay_rate);
  }
  if (name == "fixed") return std::make_unique<FixedThreshold>();
  if (name == "target_sparsity") {
    if (!(config.target_sparsity > 0.0 && config.target_sparsity <= 1.0)) {
      throw core::UserError("encoding.target_sparsity " + std::to_string(config.target_sparsity) +
                            " must lie in (0, 1]");
    }
    return std::make_unique<AdaptiveThreshold>(config.target_sparsity, config.target_sparsity,
                                               config.decay_rate);
  }
  throw core::UserError("encoding.threshold_algorithm: unknown value '" + name +
                        "' (adaptive, fixed, target_sparsity)");
}

}  // namespace gradshare::codec
