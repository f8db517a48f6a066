// init.h: weight initialisation. Kernels are drawn from N(0, sigma^2):
//   he:     sigma^2 = 2 / fan_in            (ReLU-family layers)
//   xavier: sigma^2 = 2 / (fan_in + fan_out)
//   auto:   he for relu / leaky_relu / elu, xavier otherwise.
// Biases start at zero.
#pragma once

#include <span>
#include <string>

#include "core/rng.h"
#include "nn/layer.h"

namespace gradshare::nn {

// Fills one layer's parameters (its blocks in order, `params` sized to match) from `rng`.
// `init` is "auto" | "he" | "xavier"; anything else throws UserError naming model.init.
void initialise_layer(const Layer& layer, const std::string& init, std::span<float> params,
                      core::Rng& rng);

}  // namespace gradshare::nn
