// sparsity_band.h: how far the encoder's sparsity band and its congestion cap are scaled
// (encoder.h): the cap as a fraction of the parameters and as a count of quanta, a small
// model's factor (encoding.min_quanta) and the most any factor may scale the band.
#pragma once

#include <cstddef>

#include "config/experiment_config.h"

namespace gradshare::codec {

// encoding.max_message_sparsity as a fraction of the parameters (see the key's help); 1: no cap.
double message_cap_fraction(const config::EncodingConfig& config);

// The cap as a count of full quanta of n parameters, with the band `scale` times denser.
std::size_t cap_quanta(double fraction, double scale, std::size_t n);

// encoding.min_quanta's factor: how many times denser the band must be for its lower end to
// ask for min_quanta quanta per message of n parameters (1 when it does already, or for the
// fixed threshold).
double small_model_band_scale(const config::EncodingConfig& config, std::size_t n);

// The most the band may be scaled (warm-up and small model together): its upper end no denser
// than 1/16 of the parameters, where a bitmap costs what sparse indices do. Beyond it a band
// could ask for more than every element (a 338-parameter Downpour shard scaled for 40 quanta):
// tau would then shrink forever, the quanta with it.
double largest_band_scale(const config::EncodingConfig& config);

// The band's factor over training: the warm-up's (encoding.warmup_density at epoch 0, falling
// geometrically to 1 at encoding.warmup_epochs) times the small model's, at most the largest.
class BandScale {
 public:
  BandScale(const config::EncodingConfig& config, std::size_t n);
  double at(double epochs) const;

 private:
  double small_model_, largest_, warmup_epochs_, warmup_density_;
};

}  // namespace gradshare::codec
