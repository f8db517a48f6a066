// normalize.cpp: min/max and mean/variance of the training features (accumulated in double).
#include "data/normalize.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace gradshare::data {

NormalizationFit::NormalizationFit(const std::string& mode) : mode_(mode) {
  if (mode != "scale" && mode != "standardize" && mode != "none")
    throw core::UserError("data.normalize: unknown mode '" + mode +
                          "' (expected scale, standardize or none)");
}

void NormalizationFit::add(const float* values, std::size_t count) {
  if (mode_ == "none" || count == 0) return;
  if (mode_ == "scale") {
    const auto [low, high] = std::minmax_element(values, values + count);
    low_ = count_ == 0 ? *low : std::min(low_, *low);
    high_ = count_ == 0 ? *high : std::max(high_, *high);
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      sum_ += values[i];
      sum_squares_ += double{values[i]} * values[i];
    }
  }
  count_ += count;
}

Normalization NormalizationFit::result() const {
  Normalization result;
  if (mode_ == "none" || count_ == 0) return result;
  if (mode_ == "scale") {
    result.offset = low_;
    // A constant training set is only shifted: there is no range to scale.
    if (high_ > low_) result.scale = static_cast<float>(1.0 / (double{high_} - double{low_}));
    return result;
  }
  const auto n = static_cast<double>(count_);
  const double mean = sum_ / n;
  const double variance = std::max(0.0, sum_squares_ / n - mean * mean);
  result.offset = static_cast<float>(mean);
  if (variance > 0.0) result.scale = static_cast<float>(1.0 / std::sqrt(variance));
  return result;
}

Normalization fit_normalization(const Dataset& train, const std::string& mode) {
  NormalizationFit fit(mode);
  fit.add(train.features.data(), train.features.size());
  return fit.result();
}

void apply_normalization(Dataset& dataset, const Normalization& normalization) {
  if (normalization.offset == 0.0f && normalization.scale == 1.0f) return;
  for (float& x : dataset.features) x = (x - normalization.offset) * normalization.scale;
}

}  // namespace gradshare::data
