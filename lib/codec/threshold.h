// threshold.h: threshold algorithms, which pick the next step's tau from this step's tau and
// the measured sparsity (full quanta sent / parameter count; a bitmap that the auto format
// chose counts as 1/16, DL4J's rule). The Encoder clamps the result to
// [encoding.min_threshold, encoding.max_threshold]. They are stateless, so a checkpoint only
// needs tau.
//   adaptive         DL4J's AdaptiveThresholdAlgorithm: sparsity below min_sparsity (1e-4):
//                    tau *= decay_rate (0.965936, halves in 20 steps); above max_sparsity (1e-2):
//                    tau /= decay_rate; otherwise unchanged
//   fixed            tau never changes
//   target_sparsity  the same rule with min_sparsity = max_sparsity = target_sparsity: steps
//                    tau towards the one target and then oscillates within one decay step of it
#pragma once

#include <memory>

#include "config/experiment_config.h"

namespace gradshare::codec {

class ThresholdAlgorithm {
 public:
  virtual ~ThresholdAlgorithm() = default;
  virtual double next(double tau, double sparsity) const = 0;
};

class AdaptiveThreshold : public ThresholdAlgorithm {
 public:
  AdaptiveThreshold(double min_sparsity, double max_sparsity, double decay_rate);
  double next(double tau, double sparsity) const override;

 private:
  double min_sparsity_;
  double max_sparsity_;
  double decay_rate_;
};

class FixedThreshold : public ThresholdAlgorithm {
 public:
  double next(double tau, double sparsity) const override;
};

// Validates the keys its algorithm uses (core::UserError naming the key) and builds it.
std::unique_ptr<ThresholdAlgorithm> make_threshold_algorithm(const config::EncodingConfig& config);

}  // namespace gradshare::codec
