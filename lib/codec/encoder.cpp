// encoder.cpp: the Encoder of encoder.h.
#include "codec/encoder.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "codec/values.h"
#include "codec/sparsity_band.h"
#include "core/errors.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_encode.h"
#include "kernels/cpu/codec_isa.h"

namespace gradshare::codec {
namespace {

namespace cpu = kernels::cpu;

// Smallest tau the encoder uses whatever encoding.min_threshold says: a normal float, as the
// decoder requires.
constexpr float kSmallestTau = 1e-30f;

}  // namespace

Format parse_format(const std::string& name) {
  if (name == "auto") return Format::kAuto;
  if (name == "sparse") return Format::kSparse;
  if (name == "bitmap") return Format::kBitmap;
  if (name == "compressed") return Format::kCompressed;
  throw core::UserError("encoding.format: unknown value '" + name +
                        "' (auto, sparse, bitmap, compressed)");
}

Encoder::Encoder(const config::EncodingConfig& config, std::size_t parameter_count,
                 const Kernels& kernels)
    : format_(parse_format(config.format)),
      min_tau_(std::max(static_cast<float>(config.min_threshold), kSmallestTau)),
      max_tau_(static_cast<float>(config.max_threshold)),
      shake_up_every_(config.shake_up_every_steps),
      shake_up_divisor_(config.shake_up_divisor),
      threshold_algorithm_(make_threshold_algorithm(config)),
      residual_processor_(make_residual_processor(config)),
      kernels_(&kernels),
      band_scale_at_(config, parameter_count) {
  if (parameter_count == 0 || parameter_count > kMaxParameterCount) {
    throw core::UserError("the model has " + std::to_string(parameter_count) +
                          " parameters; gradient encoding supports 1 to " +
                          std::to_string(kMaxParameterCount));
  }
  if (format_ == Format::kSparse &&
      4 * static_cast<std::uint64_t>(parameter_count) > kMaxPayloadBytes) {
    throw core::UserError("encoding.format: sparse messages of a model with " +
                          std::to_string(parameter_count) + " parameters could exceed the " +
                          "message format's 32-bit payload length (sparse supports at most " +
                          std::to_string(kMaxPayloadBytes / 4) + "); use auto or compressed");
  }
  if (config.initial_threshold > 0 && !(config.min_threshold <= config.initial_threshold &&
                                        config.initial_threshold <= config.max_threshold)) {
    throw core::UserError(
        "encoding.initial_threshold (" + std::to_string(config.initial_threshold) +
        ") must lie within [encoding.min_threshold, encoding.max_threshold] = [" +
        std::to_string(config.min_threshold) + ", " + std::to_string(config.max_threshold) + "]");
  }
  if (!(max_tau_ >= min_tau_)) {
    throw core::UserError("encoding.max_threshold (" + std::to_string(config.max_threshold) +
                          ") is below the smallest usable threshold");
  }
  if (shake_up_every_ < 0) {
    throw core::UserError("encoding.shake_up_every_steps must not be negative");
  }
  if (!(config.warmup_epochs >= 0.0)) {
    throw core::UserError("encoding.warmup_epochs must not be negative, not " +
                          std::to_string(config.warmup_epochs));
  }
  if (!(config.warmup_density >= 1.0)) {
    throw core::UserError("encoding.warmup_density must be at least 1, not " +
                          std::to_string(config.warmup_density));
  }
  if (!(shake_up_divisor_ >= 1.0)) {
    throw core::UserError("encoding.shake_up_divisor must be at least 1, not " +
                          std::to_string(shake_up_divisor_));
  }
  residual_.assign(parameter_count, 0.0f);
  set_threshold(static_cast<float>(config.initial_threshold));
  calibration_sparsity_ = config.threshold_algorithm == "target_sparsity"
                              ? config.target_sparsity
                              : std::sqrt(config.min_sparsity * config.max_sparsity);
  cap_fraction_ = message_cap_fraction(config);
  set_training_progress(0.0);
  max_cap_ = cap_;  // the warm-up's start is its densest (limit_message_bytes comes later)
}

void Encoder::set_training_progress(double epochs) {
  band_scale_ = band_scale_at_.at(epochs);
  cap_ = std::min(cap_quanta(cap_fraction_, band_scale_, residual_.size()), limit_cap_);
}

void Encoder::carry_values() {
  GS_CHECK(limit_cap_ == std::numeric_limits<std::size_t>::max(),
           "carry_values() after limit_message_bytes()");
  GS_CHECK(shake_up_every_ == 0, "a values encoder does not shake up");
  values_ = true;
}

void Encoder::limit_message_bytes(std::size_t bytes) {
  if (!values_ && format_ != Format::kAuto && format_ != Format::kSparse) return;
  const std::size_t n = residual_.size();
  const std::size_t entry_bytes = values_ ? values_payload_bound(1, n) : 4;
  GS_CHECK(bytes >= kHeaderBytes + entry_bytes,
           "a message limit of " + std::to_string(bytes) + " bytes");
  limit_cap_ = values_ ? values_entries_within(bytes - kHeaderBytes, n)
                       : (bytes - kHeaderBytes) / entry_bytes;
  cap_ = std::min(cap_, limit_cap_);
  max_cap_ = std::min(max_cap_, limit_cap_);
}

void Encoder::set_message_cap(std::size_t entries) {
  cap_ = std::min(std::max<std::size_t>(entries, 1), limit_cap_);
}

float Encoder::clamp_tau(double tau) const {
  return std::clamp(static_cast<float>(tau), min_tau_, max_tau_);
}

void Encoder::set_threshold(float tau) {
  calibrate_ = !(tau > 0.0f);
  tau_ = clamp_tau(calibrate_ ? max_tau_ : tau);
}

void Encoder::calibrate(std::span<const float> update) {
  magnitudes_.resize(residual_.size());
  for (std::size_t i = 0; i < residual_.size(); ++i) {
    const float magnitude = std::fabs(residual_[i] + update[i]);
    magnitudes_[i] = std::isnan(magnitude) ? 0.0f : magnitude;  // (NaN has no order to select by)
  }
  take_calibration();
}

std::size_t Encoder::calibration_rank() const {
  return std::max<std::size_t>(
      1, static_cast<std::size_t>(std::min(1.0, calibration_sparsity_ * band_scale_) *
                                  static_cast<double>(residual_.size())));
}

void Encoder::take_calibration() {
  const std::size_t k = std::min(calibration_rank(), magnitudes_.size());
  const auto nth = magnitudes_.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(magnitudes_.begin(), nth, magnitudes_.end(), std::greater<float>());
  // NaN or Inf are reported by the encode step itself; a zero update keeps tau for later.
  if (std::isfinite(*nth) && *nth > 0.0f) {
    tau_ = clamp_tau(*nth);
    calibrate_ = false;
  }
}

void Encoder::set_step(std::int64_t step) {
  GS_CHECK(step >= 0, "encoder step must not be negative");
  step_ = step;
}

std::size_t Encoder::max_message_bytes() const {
  const std::size_t n = residual_.size();
  const std::size_t bitmap = kHeaderBytes + cpu::bitmap_bytes(n);
  // A capped message carries at most max_cap_ quanta (the cap at the warm-up's start);
  // shake-ups are bitmaps whatever the cap.
  const std::size_t entries = shake_up_every_ > 0 ? n : max_cap_;
  if (values_) return kHeaderBytes + values_payload_bound(entries, n);
  switch (format_) {
    case Format::kSparse:
      return kHeaderBytes + 4 * entries;
    case Format::kCompressed:
      return kHeaderBytes + n / 2 + 2;  // Rice codes of few entries can exceed 4 bytes each
    case Format::kAuto:  // the smallest of the three: never above sparse or bitmap
      return std::min(bitmap, kHeaderBytes + 4 * entries);
    case Format::kBitmap:
      break;
  }
  return bitmap;
}

std::size_t Encoder::message_bytes_bound(std::span<const float> update) const {
  const bool shake_up_next = shake_up_every_ > 0 && (step_ + 1) % shake_up_every_ == 0;
  if (calibrate_ || shake_up_next || (format_ != Format::kAuto && format_ != Format::kSparse))
    return max_message_bytes();
  GS_CHECK(update.size() == residual_.size(), "update has the wrong size");
  const std::size_t entries = std::min(count_firing(update, tau_), cap_);
  return std::min(max_message_bytes(), kHeaderBytes + 4 * entries);
}

EncodeStats Encoder::encode(std::span<const float> update, const MessageMeta& meta,
                            std::vector<std::uint8_t>& out) {
  GS_CHECK(update.size() == residual_.size(), "update has " + std::to_string(update.size()) +
                                                  " elements, the encoder " +
                                                  std::to_string(residual_.size()));
  // Before any state changes: a meta that does not fit the header leaves the encoder as it was.
  if (std::string error; !check_meta(meta, &error)) {
    throw core::RuntimeError("gradient encoding: " + error);
  }
  const std::int64_t step = step_ + 1;
  if (calibrate_) calibrate(update);
  const float tau = tau_;
  const bool shake_up = shake_up_every_ > 0 && step % shake_up_every_ == 0;
  Payload payload;
  // Step 3b: how many would fire decides whether this message is capped (read-only pass).
  const std::size_t firing = shake_up || cap_ >= residual_.size() ? 0 : count_firing(update, tau);
  const bool capped = firing > cap_;
  float message_tau = tau;
  if (shake_up) {
    const bool negative = (step / shake_up_every_) % 2 == 0;
    const float half = tau * 0.5f;  // the decoder computes the same float
    const HalfQuantum quantum{static_cast<float>(tau / shake_up_divisor_), negative ? -half : half};
    payload = encode_bitmap(update, 0, 0, tau, quantum, out);
    payload.flags = kFlagShakeUp | (negative ? kFlagHalfNegative : 0u);
  } else if (capped) {
    out.clear();         // stays empty if the update holds a NaN or Inf (accumulate throws)
    accumulate(update);  // r += u: the same one rounding the fused select does
    message_tau = cap_threshold(tau);
    if (zeros_.empty()) zeros_.assign(residual_.size(), 0.0f);
    payload = format_ == Format::kBitmap ? encode_bitmap(zeros_, 0, 0, message_tau, HalfQuantum{}, out)
                                         : encode_selected(zeros_, message_tau, out);
  } else if (format_ == Format::kBitmap) {
    payload = encode_bitmap(update, 0, 0, tau, HalfQuantum{}, out);
  } else {
    payload = encode_selected(update, tau, out);
  }
  // The threshold algorithm sees what fired at tau, capped or not (a bitmap the auto format
  // would have chosen counts as 1/16), against the band as the warm-up has it now.
  const std::size_t fired = capped ? firing : payload.entries - payload.half_entries;
  const bool auto_bitmap = capped ? format_ == Format::kAuto && fired > auto_bitmap_limit()
                                  : payload.auto_bitmap;
  return finish(payload, meta, {step, tau, message_tau, fired, capped, auto_bitmap, shake_up}, out);
}

EncodeStats Encoder::finish(const Payload& payload, const MessageMeta& meta, const Fired& fired,
                            std::vector<std::uint8_t>& out) {
  const double fired_sparsity =
      fired.auto_bitmap ? 1.0 / 16
                        : static_cast<double>(fired.count) / static_cast<double>(residual_.size());
  MessageHeader header;
  header.encoding = payload.encoding;
  header.flags = payload.flags | meta.flags;
  header.origin = meta.origin;
  header.seq = meta.seq;
  header.iteration = meta.iteration;
  header.epoch = meta.epoch;
  header.tau = fired.message_tau;
  header.parameter_count = residual_.size();
  header.entry_count = payload.entries;
  header.payload_bytes = out.size() - kHeaderBytes;
  seal_message(header, out);
  GS_CHECK(out.size() <= max_message_bytes(), "message larger than max_message_bytes()");

  EncodeStats stats;
  stats.entries = payload.entries;
  stats.half_entries = payload.half_entries;
  stats.encoding = payload.encoding;
  stats.bytes = out.size();
  stats.tau = fired.message_tau;
  stats.capped = fired.capped;
  stats.sparsity = static_cast<double>(payload.entries) / static_cast<double>(residual_.size());
  stats.shake_up = fired.shake_up;
  stats.clipped_mass = residual_processor_->process(fired.step, fired.tau, residual_, *kernels_);

  tau_ = clamp_tau(threshold_algorithm_->next(fired.tau, fired_sparsity / band_scale_));
  step_ = fired.step;
  return stats;
}


void Encoder::accumulate(std::span<const float> update) {
  GS_CHECK(update.size() == residual_.size(), "update has " + std::to_string(update.size()) +
                                                  " elements, the encoder " +
                                                  std::to_string(residual_.size()));
  const AddResult result = kernels_->add(update, residual_);
  if (result.bad != kNoBadIndex) fail_non_finite(update, result.bad);
}

std::size_t Encoder::auto_bitmap_limit() const {
  const std::size_t n = residual_.size();
  return std::max(n / 2, std::min<std::size_t>(n, 8));
}

std::size_t Encoder::count_firing(std::span<const float> update, float tau) const {
  // On the CPU whatever the kernels: the residual is a host vector (kernels.h); a device
  // residual would need this pass among the Kernels.
  return cpu::count_firing(cpu::best_isa(), update, residual_, tau);
}

float Encoder::cap_threshold(float tau) {
  // Without a branch: when the cap binds, whether |r| >= tau is often close to a coin toss, and
  // a branch mispredicted on every other element cost more than the rest of the encode step.
  magnitudes_.resize(residual_.size());  // (nothing to do after the first time)
  std::size_t count = 0;
  for (const float r : residual_) {
    const float magnitude = std::fabs(r);
    magnitudes_[count] = magnitude;
    count += magnitude >= tau ? 1 : 0;
  }
  return raised_to_cap(std::span(magnitudes_).first(count), tau);
}

float Encoder::raised_to_cap(std::span<float> magnitudes, float tau) {
  if (magnitudes.empty()) return tau;  // (the count pass saw more: rounding at the edge)
  // The cap-th largest magnitude fires with at most cap quanta (ties aside) and at least one.
  const auto nth =
      magnitudes.begin() + static_cast<std::ptrdiff_t>(std::min(cap_, magnitudes.size()) - 1);
  std::nth_element(magnitudes.begin(), nth, magnitudes.end(), std::greater<float>());
  float raised = std::max(*nth, tau);
  // Ties at the cap-th magnitude could still exceed the cap: step just above them.
  const auto at_or_above = static_cast<std::size_t>(
      std::count_if(magnitudes.begin(), magnitudes.end(), [&](float m) { return m >= raised; }));
  if (at_or_above > cap_) raised = std::nextafter(raised, std::numeric_limits<float>::infinity());
  return raised;
}

}  // namespace gradshare::codec
