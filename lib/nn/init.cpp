// init.cpp: He / Xavier normal initialisation.
#include "nn/init.h"

#include <cmath>

#include "core/errors.h"

namespace gradshare::nn {
namespace {

bool relu_family(Activation activation) {
  return activation == Activation::kRelu || activation == Activation::kLeakyRelu ||
         activation == Activation::kElu;
}

}  // namespace

void initialise_layer(const Layer& layer, const std::string& init, std::span<float> params,
                      core::Rng& rng) {
  if (init != "auto" && init != "he" && init != "xavier")
    throw core::UserError("model.init: unknown initialisation '" + init + "' (auto, he, xavier)");
  const bool he = init == "he" || (init == "auto" && relu_family(layer.activation()));
  std::size_t offset = 0;
  for (const ParameterBlock& block : layer.parameter_blocks()) {
    const std::size_t n = element_count(block.shape);
    std::span<float> values = params.subspan(offset, n);
    offset += n;
    if (block.role != "kernel") {
      for (float& v : values) v = 0.0f;
      continue;
    }
    const double variance = he ? 2.0 / static_cast<double>(block.fan_in)
                               : 2.0 / static_cast<double>(block.fan_in + block.fan_out);
    const auto sigma = static_cast<float>(std::sqrt(variance));
    for (float& v : values) v = sigma * rng.normal();
  }
}

}  // namespace gradshare::nn
