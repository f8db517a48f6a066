// dataset.cpp: Dataset helpers and the minibatch gather.
#include "data/dataset.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "core/errors.h"

namespace gradshare::data {

std::size_t Dataset::sample_size() const {
  return static_cast<std::size_t>(std::accumulate(sample_shape.begin(), sample_shape.end(),
                                                  std::int64_t{1}, std::multiplies<>()));
}

void gather_batch(const Dataset& dataset, std::span<const std::uint32_t> indices, float* x,
                  std::int32_t* y) {
  const std::size_t width = dataset.sample_size();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    GS_CHECK(i < dataset.size(), "sample index out of range");
    std::copy_n(dataset.features.data() + i * width, width, x + k * width);
    y[k] = dataset.labels[i];
  }
}

}  // namespace gradshare::data
