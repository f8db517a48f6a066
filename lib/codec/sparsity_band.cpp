// sparsity_band.cpp: the band and cap scaling of sparsity_band.h.
#include "codec/sparsity_band.h"

#include <algorithm>
#include <cmath>

namespace gradshare::codec {
namespace {

// The band's lower (upper) end as a fraction of the parameters; 0 for the fixed threshold.
double band_end(const config::EncodingConfig& config, bool upper) {
  if (config.threshold_algorithm == "adaptive")
    return upper ? config.max_sparsity : config.min_sparsity;
  if (config.threshold_algorithm == "target_sparsity") return config.target_sparsity;
  return 0.0;
}

}  // namespace

double message_cap_fraction(const config::EncodingConfig& config) {
  if (config.max_message_sparsity != 0.0) return config.max_message_sparsity;
  const double upper = band_end(config, /*upper=*/true);
  return upper > 0.0 ? 2 * upper : 1.0;
}

std::size_t cap_quanta(double fraction, double scale, std::size_t n) {
  const double scaled = fraction * scale;
  if (scaled >= 1.0) return n;
  return std::max<std::size_t>(
      1, static_cast<std::size_t>(std::ceil(scaled * static_cast<double>(n))));
}

double small_model_band_scale(const config::EncodingConfig& config, std::size_t n) {
  const double lowest = band_end(config, /*upper=*/false);
  if (config.min_quanta <= 0 || lowest <= 0.0) return 1.0;
  return std::max(1.0, static_cast<double>(config.min_quanta) / (lowest * static_cast<double>(n)));
}

double largest_band_scale(const config::EncodingConfig& config) {
  constexpr double kDensestBand = 1.0 / 16;
  const double upper = band_end(config, /*upper=*/true);
  if (upper <= 0.0) return 1.0;
  return std::max(1.0, kDensestBand / upper);
}

BandScale::BandScale(const config::EncodingConfig& config, std::size_t n)
    : small_model_(small_model_band_scale(config, n)),
      largest_(largest_band_scale(config)),
      warmup_epochs_(config.warmup_epochs),
      warmup_density_(config.warmup_density) {}

double BandScale::at(double epochs) const {
  const double warmup =
      epochs < warmup_epochs_
          ? std::pow(warmup_density_, 1.0 - std::max(0.0, epochs) / warmup_epochs_)
          : 1.0;
  return std::min(small_model_ * warmup, largest_);
}

}  // namespace gradshare::codec
