// model_specs.h: what the model tests build models from: layer specs with the fields each type
// reads, and a random minibatch (standard-normal inputs, uniform labels) for a model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment_config.h"
#include "core/rng.h"
#include "nn/model.h"

namespace gradshare::nn::testing {

inline config::LayerSpec layer(std::string type) {
  config::LayerSpec spec;
  spec.type = std::move(type);
  return spec;
}

inline config::LayerSpec dense(std::int64_t units, std::string activation = "none") {
  config::LayerSpec spec = layer("dense");
  spec.units = units;
  spec.activation = std::move(activation);
  return spec;
}

inline config::LayerSpec conv(std::int64_t filters, std::int64_t kernel, std::int64_t stride,
                              std::int64_t padding, std::string activation) {
  config::LayerSpec spec = layer("conv2d");
  spec.filters = filters;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.padding = padding;
  spec.activation = std::move(activation);
  return spec;
}

inline config::LayerSpec maxpool(std::int64_t pool, std::int64_t stride) {
  config::LayerSpec spec = layer("maxpool2d");
  spec.pool = pool;
  spec.stride = stride;
  return spec;
}

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
};

inline Batch random_batch(const Model& model, std::size_t batch, std::uint64_t seed) {
  core::Rng rng(seed);
  Batch b;
  b.x.resize(batch * model.sample_size());
  for (float& v : b.x) v = rng.normal();
  for (std::size_t i = 0; i < batch; ++i)
    b.labels.push_back(static_cast<std::int32_t>(rng.below(model.num_classes())));
  return b;
}

}  // namespace gradshare::nn::testing
