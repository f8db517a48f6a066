// normalize.cpp: min/max and mean/variance of the training features (accumulated in double).
#include "data/normalize.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace gradshare::data {

Normalization fit_normalization(const Dataset& train, const std::string& mode) {
  if (mode != "scale" && mode != "standardize" && mode != "none")
    throw core::UserError("data.normalize: unknown mode '" + mode +
                          "' (expected scale, standardize or none)");
  Normalization result;
  if (mode == "none" || train.features.empty()) return result;
  if (mode == "scale") {
    const auto [low, high] = std::minmax_element(train.features.begin(), train.features.end());
    result.offset = *low;
    // A constant training set is only shifted: there is no range to scale.
    if (*high > *low) result.scale = static_cast<float>(1.0 / (double{*high} - double{*low}));
    return result;
  }
  double sum = 0.0, sum_squares = 0.0;
  for (float x : train.features) {
    sum += x;
    sum_squares += double{x} * x;
  }
  const auto n = static_cast<double>(train.features.size());
  const double mean = sum / n;
  const double variance = std::max(0.0, sum_squares / n - mean * mean);
  result.offset = static_cast<float>(mean);
  if (variance > 0.0) result.scale = static_cast<float>(1.0 / std::sqrt(variance));
  return result;
}

void apply_normalization(Dataset& dataset, const Normalization& normalization) {
  if (normalization.offset == 0.0f && normalization.scale == 1.0f) return;
  for (float& x : dataset.features) x = (x - normalization.offset) * normalization.scale;
}

}  // namespace gradshare::data
