// normalize.h: fitting and applying the feature normalisation (data.normalize).
//   scale       - maps the training set's [min, max] to [0, 1] (pixels 0..255 -> x / 255)
//   standardize - subtracts the training mean and divides by the training standard deviation
//   none        - identity
// One scalar pair for all features, so a feature that is constant in the training set (a
// border pixel) cannot blow up on test data; fitted on the training split only.
#pragma once

#include <cstddef>
#include <string>

#include "data/dataset.h"

namespace gradshare::data {

// `mode` is one of the data.normalize choices; anything else is a UserError.
Normalization fit_normalization(const Dataset& train, const std::string& mode);

// The same fit over values given in pieces (a training split read by partitions, streamed).
class NormalizationFit {
 public:
  explicit NormalizationFit(const std::string& mode);  // UserError for an unknown mode
  void add(const float* values, std::size_t count);
  Normalization result() const;

 private:
  std::string mode_;
  std::size_t count_ = 0;
  float low_ = 0, high_ = 0;
  double sum_ = 0, sum_squares_ = 0;
};

void apply_normalization(Dataset& dataset, const Normalization& normalization);

}  // namespace gradshare::data
