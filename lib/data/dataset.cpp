// dataset.cpp: Dataset helpers and the minibatch gather.
#include "data/dataset.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "core/errors.h"
#include "data/sample_reader.h"

namespace gradshare::data {

std::size_t Dataset::sample_size() const {
  return static_cast<std::size_t>(std::accumulate(sample_shape.begin(), sample_shape.end(),
                                                  std::int64_t{1}, std::multiplies<>()));
}

const float* Dataset::sample(std::size_t i) const {
  GS_CHECK(!reader, "samples of a split read by partitions are not in memory");
  return features.data() + i * sample_size();
}

void gather_batch(const Dataset& dataset, std::span<const std::uint32_t> indices, float* x,
                  std::int32_t* y) {
  if (dataset.reader) {
    dataset.reader->read(indices, x);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      GS_CHECK(indices[k] < dataset.size(), "sample index out of range");
      y[k] = dataset.labels[indices[k]];
    }
    return;
  }
  const std::size_t width = dataset.sample_size();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    GS_CHECK(i < dataset.size(), "sample index out of range");
    std::copy_n(dataset.features.data() + i * width, width, x + k * width);
    y[k] = dataset.labels[i];
  }
}

void read_ahead(const Dataset& dataset, std::vector<std::vector<std::uint32_t>> batches) {
  if (dataset.reader) dataset.reader->read_ahead(std::move(batches));
}

}  // namespace gradshare::data
