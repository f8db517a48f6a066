// encoder_candidates.cpp: the Encoder's encode step over candidate elements (encoder.h), the
// aggregating relay's (train/sharing/aggregating_relay.h): its cost follows the candidates, not
// the parameters.
#include <algorithm>
#include <cmath>
#include <string>

#include "codec/encoder.h"
#include "codec/values.h"
#include "core/errors.h"

namespace gradshare::codec {

void Encoder::calibrate_candidates(std::span<const std::uint32_t> candidates) {
  // Fewer candidates than the rank: the k-th largest is a zero, tau waits, as in calibrate.
  if (candidates.size() < calibration_rank()) return;
  magnitudes_.clear();
  const std::size_t n = residual_.size();
  for (const std::uint32_t i : candidates) {
    GS_CHECK(i < n, "candidate " + std::to_string(i) + " of " + std::to_string(n));
    const float magnitude = std::fabs(residual_[i]);
    magnitudes_.push_back(std::isnan(magnitude) ? 0.0f : magnitude);
  }
  take_calibration();
}

EncodeStats Encoder::encode_candidates(std::span<const std::uint32_t> candidates,
                                       const MessageMeta& meta, std::vector<std::uint8_t>& out) {
  const std::size_t n = residual_.size();
  // A full pass where one is needed anyway (shake-ups, a forced bitmap) or cheaper (candidates
  // past an eighth of the parameters).
  if (!values_ && (shake_up_every_ > 0 || format_ == Format::kBitmap || candidates.size() > n / 8)) {
    if (zeros_.empty()) zeros_.assign(n, 0.0f);
    return encode(zeros_, meta, out);
  }
  if (std::string error; !check_meta(meta, &error)) {
    throw core::RuntimeError("gradient encoding: " + error);
  }
  const std::int64_t step = step_ + 1;
  if (calibrate_) calibrate_candidates(candidates);
  const float tau = tau_;
  magnitudes_.clear();
  for (const std::uint32_t i : candidates) {
    GS_CHECK(i < n, "candidate " + std::to_string(i) + " of " + std::to_string(n));
    const float magnitude = std::fabs(residual_[i]);
    if (!std::isfinite(magnitude))
      throw core::RuntimeError("gradient encoding: residual element " + std::to_string(i) +
                               " is not finite");
    if (magnitude >= tau) magnitudes_.push_back(magnitude);
  }
  const std::size_t firing = magnitudes_.size();
  const bool capped = firing > cap_;
  float message_tau = tau;
  if (capped) message_tau = raised_to_cap(tau);  // as cap_threshold, over the candidates
  if (values_) {
    selected_.clear();
    for (const std::uint32_t i : candidates)
      if (std::fabs(residual_[i]) >= message_tau) selected_.push_back(i);
    std::sort(selected_.begin(), selected_.end());  // not the candidates: the cap's few
    write_values_payload(residual_, selected_, out);
    Payload payload;
    payload.encoding = Encoding::kValues;
    payload.entries = selected_.size();
    return finish(payload, meta, {step, tau, message_tau, firing, capped, false, false}, out);
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
