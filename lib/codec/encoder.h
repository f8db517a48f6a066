// encoder.h: a worker's encoder: its residual, threshold, residual post-processor and shake-up
// schedule, turning each update into one message (format in message.h).
//
// One encode step, with update u, residual r and threshold tau:
//   1. r += u (a NaN/Inf anywhere: core::RuntimeError, no message, see encode)
//   2. every |r_i| >= tau becomes a quantum copysign(tau, r_i) in the message and r_i -= it,
//      exactly: decoded(message) + r_after == r_before + u to within one rounding per element
//   3. the smallest encoding is sent (format auto): sparse, compressed or bitmap; indices in
//      increasing order. When more than n/2 quanta fire the encoder finishes straight into a
//      bitmap (within a few percent of the smallest there), keeping every quantum it already
//      selected (DL4J drops them; gradshare must not)
//   3b. congestion cap (encoding.max_message_sparsity): a read-only pass counts |r + u| >= tau
//      first; when more than cap quanta would fire, r += u and only the cap largest |r_i| are
//      sent, as quanta of a tau raised for this message (the cap-th largest |r_i|); the rest
//      stays in the residual, so a backlog after back-pressure or a tau still too low never
//      becomes a burst that moves every parameter at once. Rounding is as in step 2 (one
//      addition, one subtraction per element). The threshold algorithm still sees the
//      uncapped sparsity, so tau keeps adapting
//   4. residual post-processor (clip every 5 steps to +-5 tau; clipped mass reported)
//   5. the threshold algorithm picks the next tau (threshold.h)
// encoding.initial_threshold 0 (the default) calibrates tau before the first step: the
// sqrt(min_sparsity * max_sparsity) quantile of |r + u| (target_sparsity's target with that
// algorithm), so the first messages already lie in the band instead of τ spending a hundred
// capped steps climbing from a guess.
// Sparsity warm-up (encoding.warmup_epochs = E > 0, Deep Gradient Compression, Lin et al.
// 2018): at training progress p epochs (set_training_progress) the sparsity band, the cap
// and the calibration quantile are warmup_density^(1 - p/E) times denser, so the first
// messages carry warmup_density times more quanta and the band shrinks geometrically to the
// configured one at E epochs; tau follows through the threshold algorithm, which sees the
// measured sparsity divided by that factor. Progress is the caller's (the training step, so a
// resumed or replacement worker continues the schedule rather than restarting it).
// A small model's band (encoding.min_quanta = q > 0): where the band's lower end (or
// target_sparsity's target) asks for fewer than q quanta per message, the band is
// q / (n min_sparsity) times denser for the whole run, as the warm-up's factor is (the two
// multiply): a message then never carries fewer than about q quanta. Together the two factors
// never make the band's upper end denser than 1/16 of the parameters.
// Shake-up (encoding.shake_up_every_steps = N > 0): every N-th step is sent as a bitmap that
// also carries, as half quanta tau/2, the elements with tau/shake_up_divisor <= |r| < tau whose
// sign is this shake-up's: the k-th shake-up (k = step / N) sends +tau/2 for odd k and -tau/2
// for even k; the other sign waits for the next one. A shake-up is always a bitmap, whatever
// the format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codec/kernels.h"
#include "codec/message.h"
#include "codec/residual.h"
#include "codec/sparsity_band.h"
#include "codec/threshold.h"
#include "config/experiment_config.h"

namespace gradshare::codec {

enum class Format { kAuto, kSparse, kBitmap, kCompressed };
// "auto" | "sparse" | "bitmap" | "compressed"; core::UserError naming encoding.format otherwise.
Format parse_format(const std::string& name);

struct EncodeStats {
  std::size_t entries = 0;       // quanta in the message (half quanta included)
  std::size_t half_entries = 0;  // half quanta (shake-up)
  Encoding encoding = Encoding::kSparse;
  std::size_t bytes = 0;  // whole message
  float tau = 0.0f;       // the threshold this message used (raised when capped)
  bool capped = false;    // the congestion cap raised tau for this message
  double sparsity = 0.0;  // entries / parameter count
  bool shake_up = false;
  double clipped_mass = 0.0;  // sum |removed| by the residual post-processor this step
};

class Encoder {
 public:
  // Validates the config (core::UserError naming the key). parameter_count must lie in
  // 1..kMaxParameterCount (format sparse: up to kMaxPayloadBytes / 4). The residual starts at
  // zero, tau at encoding.initial_threshold.
  Encoder(const config::EncodingConfig& config, std::size_t parameter_count,
          const Kernels& kernels = cpu_kernels());

  // One encode step (see the file comment); `out` is resized to the message. An empty
  // selection still yields a valid message with 0 entries. meta must pass check_meta (flags in
  // bits 16..23, epoch < 2^16, seq and iteration < 2^32): otherwise core::RuntimeError and
  // nothing changes.
  // A NaN or Inf in `update` (or a residual overflowing to Inf) throws core::RuntimeError
  // naming the first bad index: `out` is left empty, tau and step() are unchanged, and the
  // update elements before the bad one's 8-element chunk have been added to the residual
  // (nothing lost, nothing sent) while the rest of the residual is untouched.
  EncodeStats encode(std::span<const float> update, const MessageMeta& meta,
                     std::vector<std::uint8_t>& out);

  // An encode step of a relay residual (train/sharing/aggregating_relay.h): no update, and
  // only the elements in `candidates` (those changed since they last fired: distinct, and
  // ascending unless the encoder carries values, which sorts only what it selects) are tested
  // against tau; the rest of the residual waits until it is a candidate.
  // Cost in the candidates, not the parameters. The first tau is calibrated over the
  // candidates as if every other element were zero (true of a relay's first message). Shake-ups,
  // the bitmap format and candidates past n/8 take encode's full pass instead.
  EncodeStats encode_candidates(std::span<const std::uint32_t> candidates, const MessageMeta& meta,
                                std::vector<std::uint8_t>& out);
  // The relay's messages (call before limit_message_bytes): encode_candidates selects as above
  // (tau, cap, band) but each selected element leaves with its whole residual as an exact value
  // (codec/values.h: a bfloat16 value and a Rice-coded index, about 3.5 bytes an entry; the
  // rounding stays in the residual; the header's tau is the selection's) instead of one
  // quantum. What a relay holds below tau is then what no source has pushed past it, not the
  // remainders of every element that fired: with quanta, 2-epoch runs of the shipped MLP on a
  // 6-worker aggregating mesh ended at 71.4-80.5 % (mean 76.7) where relaying reaches
  // 77.8-82.0 % (mean 80.2; the same 6 seeds), with values at 76.1-82.1 % (mean 79.4).
  void carry_values();
  // The elements the last values message carried (encode_candidates), ascending.
  std::span<const std::uint32_t> selected() const { return selected_; }
  // |residual| at each of the last encode_candidates' candidates (in their order) before it
  // encoded: an element fired when it is at least that message's tau (EncodeStats::tau).
  // Empty when encode_candidates took the full pass.
  std::span<const float> candidate_magnitudes() const { return candidate_magnitudes_; }

  // Back-pressure: r += update only, no message; the quanta stay in the residual. Non-finite
  // values throw as in encode.
  void accumulate(std::span<const float> update);

  // Upper bound of any message this encoder can produce (for ring sizing and back-pressure):
  // header plus n/4 bytes (bitmap), n/2 + 2 (compressed), 4 cap (sparse) or the smaller of
  // n/4 and 4 cap (auto); with shake-ups, cap is n.
  std::size_t max_message_bytes() const;

  // An upper bound of the message encode(update) would produce now, from a count of what
  // fires (read-only): header + min(n/4, 4 * min(firing, cap)) for auto and sparse, else
  // max_message_bytes(). What back-pressure waits for room for.
  std::size_t message_bytes_bound(std::span<const float> update) const;

  // The largest message the transport carries: the cap of the auto and sparse formats keeps
  // every message within it (a message that could never fit would wait for room forever).
  void limit_message_bytes(std::size_t bytes);
  // A relay's cap in entries (train/sharing/aggregating_relay.h), at most the transport's limit:
  // for an encoder whose owner sets its cap instead of set_training_progress.
  void set_message_cap(std::size_t entries);
  // Where training is, in epochs (fractional), for the sparsity warm-up; starts at 0.
  void set_training_progress(double epochs);
  // How many times denser than the configured band this step's band is (the small model's
  // factor after the warm-up; 1 for most models).
  double band_scale() const { return band_scale_; }

  std::size_t parameter_count() const { return residual_.size(); }
  // Most full quanta per message now (step 3b; wider under the warm-up); parameter_count()
  // when uncapped.
  std::size_t message_cap() const { return cap_; }
  float threshold() const { return tau_; }
  // Clamped to [min_threshold, max_threshold] (checkpoints); 0 (encoding.initial_threshold's
  // default): the next encode step picks tau so that the band's middle of its r + u fires.
  void set_threshold(float tau);
  std::span<const float> residual() const { return residual_; }
  std::span<float> residual() { return residual_; }
  // Encode steps done; drives the clip and shake-up schedules. set_step for checkpoints.
  std::int64_t step() const { return step_; }
  void set_step(std::int64_t step);

 private:
  struct Payload {
    Encoding encoding = Encoding::kSparse;
    std::size_t entries = 0;
    std::size_t half_entries = 0;
    std::uint32_t flags = 0;
    bool auto_bitmap = false;  // the auto format fell back to a bitmap
  };

  // What an encode step fired, for the header, the stats and the next tau.
  struct Fired {
    std::int64_t step = 0;
    float tau = 0;          // the step's threshold
    float message_tau = 0;  // the message's (raised when capped)
    std::size_t count = 0;  // fired at tau, capped or not
    bool capped = false;
    bool auto_bitmap = false;
    bool shake_up = false;
  };
  EncodeStats finish(const Payload& payload, const MessageMeta& meta, const Fired& fired,
                     std::vector<std::uint8_t>& out);
  Payload encode_selected(std::span<const float> update, float tau, std::vector<std::uint8_t>& out);
  // Beyond this many quanta the auto format finishes in a bitmap.
  std::size_t auto_bitmap_limit() const;
  // Step 3b: how many |r + u| >= tau (nothing changes); after r += u, the raised tau at which
  // at most cap_ (and at least one) of the residual's entries fire.
  std::size_t count_firing(std::span<const float> update, float tau) const;
  float cap_threshold(float tau);
  // The raised tau at which at most cap_ (and at least one) of `magnitudes` (those >= tau)
  // fire; reorders them.
  float raised_to_cap(std::span<float> magnitudes, float tau);
  // tau from the calibration_sparsity_ quantile of |r + update| (see set_threshold).
  void calibrate(std::span<const float> update);
  // selected_ in ascending order.
  void sort_selected();
  // calibrate over the candidates alone (encode_candidates).
  void calibrate_candidates(std::span<const std::uint32_t> candidates);
  // The calibration quantile as a rank: tau is the k-th largest magnitude.
  std::size_t calibration_rank() const;
  // tau from magnitudes_ (the k-th largest, or all there are), unless that is zero or not finite.
  void take_calibration();
  Payload encode_bitmap(std::span<const float> update, std::size_t begin, std::size_t selected,
                        float tau, HalfQuantum half, std::vector<std::uint8_t>& out);
  void write_payload(std::size_t count, std::vector<std::uint8_t>& out, Payload& payload);
  [[noreturn]] void fail_non_finite(std::span<const float> update, std::size_t index) const;
  float clamp_tau(double tau) const;

  Format format_;
  float min_tau_;
  float max_tau_;
  std::int64_t shake_up_every_;
  double shake_up_divisor_;
  std::unique_ptr<ThresholdAlgorithm> threshold_algorithm_;
  std::unique_ptr<ResidualProcessor> residual_processor_;
  const Kernels* kernels_;
  std::vector<float> residual_;
  std::vector<std::int32_t> indices_;  // selected signed 1-based indices; grows on demand
  double cap_fraction_;      // encoding.max_message_sparsity resolved; >= 1: no cap
  std::size_t cap_;          // the cap now, with the warm-up's band scale
  std::size_t max_cap_;      // the cap at the warm-up's start (message size bounds)
  std::size_t limit_cap_ = std::numeric_limits<std::size_t>::max();  // limit_message_bytes
  BandScale band_scale_at_;
  double band_scale_ = 1.0;       // band_scale_at_ now
  std::vector<float> zeros_;      // the "update" of a re-selection (allocated when first capped)
  std::vector<float> magnitudes_; // |r_i| >= tau, to find the cap-th largest
  float tau_;
  bool calibrate_ = false;
  double calibration_sparsity_;
  std::int64_t step_ = 0;
  bool values_ = false;                 // carry_values()
  std::vector<std::uint32_t> selected_;  // the elements a values message carries
  std::vector<float> candidate_magnitudes_;    // encode_candidates: |r| per candidate
  std::vector<std::uint64_t> selection_bits_;  // sort_selected's bitmap, zero between calls
};

}  // namespace gradshare::codec
