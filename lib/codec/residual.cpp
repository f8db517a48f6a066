// residual.cpp: the residual post-processors of residual.h.
#include "codec/residual.h"

#include "core/errors.h"

namespace gradshare::codec {

ClipResidual::ClipResidual(std::int64_t every_steps, double multiplier)
    : every_steps_(every_steps), multiplier_(multiplier) {}

double ClipResidual::process(std::int64_t step, float tau, std::span<float> residual,
                             const Kernels& kernels) const {
  if (step % every_steps_ != 0) return 0.0;
  return kernels.clip(residual, static_cast<float>(multiplier_ * tau));
}

double KeepResidual::process(std::int64_t /*step*/, float /*tau*/, std::span<float> /*residual*/,
                             const Kernels& /*kernels*/) const {
  return 0.0;
}

std::unique_ptr<ResidualProcessor> make_residual_processor(const config::EncodingConfig& config) {
  if (config.residual == "none") return std::make_unique<KeepResidual>();
  if (config.residual == "clip") {
    if (config.clip_every_steps < 1) {
      throw core::UserError("encoding.clip_every_steps must be at least 1, not " +
                            std::to_string(config.clip_every_steps));
    }
    if (!(config.clip_multiplier >= 1.0)) {
      throw core::UserError("encoding.clip_multiplier must be at least 1, not " +
                            std::to_string(config.clip_multiplier));
    }
    return std::make_unique<ClipResidual>(config.clip_every_steps, config.clip_multiplier);
  }
  throw core::UserError("encoding.residual: unknown value '" + config.residual + "' (clip, none)");
}

}  // namespace gradshare::codec
