// dataset.h: the in-memory dataset every strategy trains on, and the minibatch gather.
//   Dataset    - float features (row-major, one sample after another), int32 class labels
//   DataSplits - train / validation / test, plus the normalisation fitted on train
//   gather_batch - copies the samples of one minibatch into contiguous buffers
//   read_ahead   - tells a training split read by partitions which minibatches come next
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace gradshare::data {

class SampleReader;

struct Dataset {
  // size() * sample_size(), row-major; empty when `reader` reads the features from the file
  // (a training split under data.read: partitions, sample_reader.h)
  std::vector<float> features;
  std::shared_ptr<SampleReader> reader;
  std::vector<std::int32_t> labels;        // one class id per sample, in [0, num_classes)
  std::vector<std::int64_t> sample_shape;  // e.g. {1, 28, 28} or {features}
  std::int32_t num_classes = 0;            // max training label + 1, or the file's attribute

  std::size_t size() const { return labels.size(); }
  std::size_t sample_size() const;
  // In-memory features only (evaluation sets always are).
  const float* sample(std::size_t i) const;
};

// The affine map applied to every feature value: x' = (x - offset) * scale. One scalar pair
// for the whole dataset (not per feature), fitted on the training split only; saved with a
// model so evaluation can reproduce it.
struct Normalization {
  float offset = 0.0f;
  float scale = 1.0f;
};

struct DataSplits {
  Dataset train, validation, test;
  Normalization normalization;
};

// Copies the samples `indices` of `dataset` to x (indices.size() * sample_size() floats) and
// their labels to y (indices.size() values).
void gather_batch(const Dataset& dataset, std::span<const std::uint32_t> indices, float* x,
                  std::int32_t* y);

// Minibatches (sample indices) that will be gathered next, in order: a split read by partitions
// reads them in the background; an in-memory one ignores this.
void read_ahead(const Dataset& dataset, std::vector<std::vector<std::uint32_t>> batches);

}  // namespace gradshare::data
