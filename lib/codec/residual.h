// residual.h: residual post-processors, run on the residual after each encode.
//   clip  every encoding.clip_every_steps (5) steps clamp r to +-clip_multiplier (5) * tau, tau
//         being the step's threshold. The mass removed is the codec's one deliberate loss and is
//         reported (EncodeStats::clipped_mass)
//   none  leave the residual alone
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "codec/kernels.h"
#include "config/experiment_config.h"

namespace gradshare::codec {

class ResidualProcessor {
 public:
  virtual ~ResidualProcessor() = default;
  // Called after encode step `step` (1-based) with that step's tau; returns the mass removed
  // (sum of |removed|).
  virtual double process(std::int64_t step, float tau, std::span<float> residual,
                         const Kernels& kernels) const = 0;
};

class ClipResidual : public ResidualProcessor {
 public:
  ClipResidual(std::int64_t every_steps, double multiplier);
  double process(std::int64_t step, float tau, std::span<float> residual,
                 const Kernels& kernels) const override;

 private:
  std::int64_t every_steps_;
  double multiplier_;
};

class KeepResidual : public ResidualProcessor {
 public:
  double process(std::int64_t step, float tau, std::span<float> residual,
                 const Kernels& kernels) const override;
};

// Validates encoding.residual and its keys (core::UserError naming the key) and builds it.
std::unique_ptr<ResidualProcessor> make_residual_processor(const config::EncodingConfig& config);

}  // namespace gradshare::codec
