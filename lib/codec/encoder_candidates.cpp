// encoder_candidates.cpp: the Encoder's encode step over candidate elements (encoder.h), the
// aggregating relay's (train/sharing/aggregating_relay.h): its cost follows the candidates, not
// the parameters.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "codec/encoder.h"
#include "core/errors.h"

namespace gradshare::codec {

void Encoder::calibrate_candidates(std::span<const std::uint32_t> candidates) {
  const auto k = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::min(1.0, calibration_sparsity_ * band_scale_) *
                                  static_cast<double>(residual_.size())));
  if (candidates.size() < k) return;  // the k-th largest is a zero: tau waits, as in calibrate
  magnitudes_.clear();
  for (const std::uint32_t i : candidates) {
    const float magnitude = std::fabs(residual_[i]);
    magnitudes_.push_back(std::isnan(magnitude) ? 0.0f : magnitude);
  }
  const auto nth = magnitudes_.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(magnitudes_.begin(), nth, magnitudes_.end(), std::greater<float>());
  if (std::isfinite(*nth) && *nth > 0.0f) {
    tau_ = clamp_tau(*nth);
    calibrate_ = false;
  }
}

EncodeStats Encoder::encode_candidates(std::span<const std::uint32_t> candidates,
                                       const MessageMeta& meta, std::vector<std::uint8_t>& out) {
  const std::size_t n = residual_.size();
  // A full pass where one is needed anyway (shake-ups, a forced bitmap) or cheaper (candidates
  // past an eighth of the parameters).
  if (shake_up_every_ > 0 || format_ == Format::kBitmap || candidates.size() > n / 8) {
    if (zeros_.empty()) zeros_.assign(n, 0.0f);
    return encode(zeros_, meta, out);
  }
  if (std::string error; !check_meta(meta, &error)) {
    throw core::RuntimeError("gradient encoding: " + error);
  }
  const std::int64_t step = step_ + 1;
  for (const std::uint32_t i : candidates) {
    GS_CHECK(i < n, "candidate " + std::to_string(i) + " of " + std::to_string(n));
    if (!std::isfinite(residual_[i]))
      throw core::RuntimeError("gradient encoding: residual element " + std::to_string(i) +
                               " is not finite");
  }
  if (calibrate_) calibrate_candidates(candidates);
  const float tau = tau_;
  magnitudes_.clear();
  for (const std::uint32_t i : candidates)
    if (std::fabs(residual_[i]) >= tau) magnitudes_.push_back(std::fabs(residual_[i]));
  const std::size_t firing = magnitudes_.size();
  const bool capped = firing > cap_;
  float message_tau = tau;
  if (capped) {  // as cap_threshold, over the candidates
    const auto nth = magnitudes_.begin() + static_cast<std::ptrdiff_t>(cap_ - 1);
    std::nth_element(magnitudes_.begin(), nth, magnitudes_.end(), std::greater<float>());
    message_tau = std::max(*nth, tau);
    const auto at_or_above = static_cast<std::size_t>(std::count_if(
        magnitudes_.begin(), magnitudes_.end(), [&](float m) { return m >= message_tau; }));
    if (at_or_above > cap_)
      message_tau = std::nextafter(message_tau, std::numeric_limits<float>::infinity());
  }
  if (indices_.size() < firing) indices_.resize(firing);
  std::size_t count = 0;
  for (const std::uint32_t i : candidates) {
    float& r = residual_[i];
    if (std::fabs(r) < message_tau) continue;
    const bool positive = r > 0;
    r -= positive ? message_tau : -message_tau;
    const auto index = static_cast<std::int32_t>(i + 1);
    indices_[count++] = positive ? index : -index;
  }
  Payload payload;
  write_payload(count, out, payload);
  const bool auto_bitmap = capped ? format_ == Format::kAuto && firing > auto_bitmap_limit()
                                  : payload.auto_bitmap;
  return finish(payload, meta, {step, tau, message_tau, firing, capped, auto_bitmap, false}, out);
}

}  // namespace gradshare::codec
