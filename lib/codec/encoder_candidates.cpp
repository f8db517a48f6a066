// encoder_candidates.cpp: the Encoder's encode step over candidate elements (encoder.h), the
// aggregating relay's (train/sharing/aggregating_relay.h): its cost follows the candidates, not
// the parameters.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "codec/encoder.h"
#include "codec/values.h"
#include "core/errors.h"

namespace gradshare::codec {
namespace {

constexpr std::size_t kPrefetchAhead = 16;  // candidates; about the misses a core keeps in flight

}  // namespace

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
    candidate_magnitudes_.clear();
    return encode(zeros_, meta, out);
  }
  if (std::string error; !check_meta(meta, &error)) {
    throw core::RuntimeError("gradient encoding: " + error);
  }
  const std::int64_t step = step_ + 1;
  if (calibrate_) calibrate_candidates(candidates);
  const float tau = tau_;
  // The one pass that reads the residual at the candidates (scattered: a cache miss each on a
  // large model); what follows reads candidate_magnitudes_ in order.
  magnitudes_.clear();
  candidate_magnitudes_.resize(candidates.size());
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const std::uint32_t i = candidates[k];
    GS_CHECK(i < n, "candidate " + std::to_string(i) + " of " + std::to_string(n));
    // Ahead of the scattered reads (the prefetch of an out-of-range candidate does not fault).
    if (k + kPrefetchAhead < candidates.size())
      __builtin_prefetch(residual_.data() + candidates[k + kPrefetchAhead]);
    const float magnitude = std::fabs(residual_[i]);
    if (!std::isfinite(magnitude))
      throw core::RuntimeError("gradient encoding: residual element " + std::to_string(i) +
                               " is not finite");
    candidate_magnitudes_[k] = magnitude;
    if (magnitude >= tau) magnitudes_.push_back(magnitude);
  }
  const std::size_t firing = magnitudes_.size();
  const bool capped = firing > cap_;
  float message_tau = tau;
  if (capped) message_tau = raised_to_cap(magnitudes_, tau);  // as cap_threshold does
  if (values_) {
    selected_.clear();
    for (std::size_t k = 0; k < candidates.size(); ++k)
      if (candidate_magnitudes_[k] >= message_tau) selected_.push_back(candidates[k]);
    sort_selected();  // not the candidates: the cap's few
    write_values_payload(residual_, selected_, out);
    Payload payload;
    payload.encoding = Encoding::kValues;
    payload.entries = selected_.size();
    return finish(payload, meta, {step, tau, message_tau, firing, capped, false, false}, out);
  }
  if (indices_.size() < firing) indices_.resize(firing);
  std::size_t count = 0;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    if (candidate_magnitudes_[k] < message_tau) continue;
    const std::uint32_t i = candidates[k];
    float& r = residual_[i];
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

void Encoder::sort_selected() {
  // A bitmap of the parameters, set and read back in order, costs n/64 words and no
  // comparisons: cheaper than sorting once the selection is more than about n/(64 log2 k).
  const std::size_t k = selected_.size(), n = residual_.size();
  const std::size_t words = (n + 63) / 64;
  if (k < 2 ||
      static_cast<double>(words) > static_cast<double>(k) * std::log2(static_cast<double>(k))) {
    std::sort(selected_.begin(), selected_.end());
    return;
  }
  selection_bits_.resize(words, 0);
  for (const std::uint32_t i : selected_) selection_bits_[i / 64] |= std::uint64_t{1} << (i % 64);
  selected_.clear();
  for (std::size_t w = 0; w < words; ++w) {
    for (std::uint64_t bits = selection_bits_[w]; bits != 0; bits &= bits - 1)
      selected_.push_back(static_cast<std::uint32_t>(64 * w + std::countr_zero(bits)));
    selection_bits_[w] = 0;
  }
}

}  // namespace gradshare::codec
