// codec_corpus.cpp: builds the decoder fuzzer's seed messages with the real Encoder.
#include "codec_corpus.h"

#include "codec/encoder.h"
#include "codec/exact.h"
#include "core/rng.h"

namespace gradshare::codec::fuzz {
namespace {

// One message from a fresh encoder: `steps` encode steps of updates where about `density` of
// the elements fire; the last step's message is kept.
CorpusEntry make_entry(const std::string& name, const std::string& format, double density,
                       std::int64_t shake_up_every, int steps, std::uint64_t seed) {
  config::EncodingConfig config;
  config.format = format;
  config.threshold_algorithm = "fixed";
  config.initial_threshold = 1e-4;  // the committed seeds' tau (not calibrated from the data)
  config.residual = "none";
  config.shake_up_every_steps = shake_up_every;
  Encoder encoder(config, kFuzzParameterCount);
  core::Rng rng(seed);
  const float tau = encoder.threshold();
  std::vector<float> update(kFuzzParameterCount);
  std::vector<std::uint8_t> message;
  for (int step = 0; step < steps; ++step) {
    for (float& u : update) {
      const float sign = rng.below(2) == 0 ? 1.0f : -1.0f;
      u = rng.uniform() < density ? sign * 1.5f * tau : sign * 0.4f * tau;
    }
    const MessageMeta meta{3, static_cast<std::uint64_t>(step + 1), 100u + step, 2, 0};
    encoder.encode(update, meta, message);
  }
  return {name + ".bin", message};
}

// An exact message (an aggregating relay's flush) of every `stride`-th element's value.
CorpusEntry make_exact_entry(const std::string& name, std::size_t stride, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> values(kFuzzParameterCount);
  for (float& v : values) v = rng.normal() * 1e-4f;
  std::vector<std::uint32_t> indices;
  for (std::size_t i = 0; i < values.size(); i += stride)
    indices.push_back(static_cast<std::uint32_t>(i));
  std::vector<std::uint8_t> message;
  encode_exact(values, indices, {3, 1, 100, 2, 1u << 17}, message);
  return {name + ".bin", message};
}

// A relay's message (Encoder::carry_values): the values its threshold selects from a residual.
CorpusEntry make_values_entry(const std::string& name, std::uint64_t seed) {
  config::EncodingConfig config;
  config.threshold_algorithm = "fixed";
  config.initial_threshold = 1e-4;
  config.residual = "none";
  Encoder relay(config, kFuzzParameterCount);
  relay.carry_values();
  core::Rng rng(seed);
  std::vector<float> update(kFuzzParameterCount);
  for (float& u : update) u = rng.normal() * 1e-4f;
  relay.accumulate(update);
  std::vector<std::uint32_t> every(kFuzzParameterCount);
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::uint32_t>(i);
  std::vector<std::uint8_t> message;
  relay.encode_candidates(every, {3, 1, 100, 2, 0}, message);
  return {name + ".bin", message};
}

}  // namespace

std::vector<CorpusEntry> make_decoder_corpus() {
  return {
      make_entry("sparse_empty", "sparse", 0.0, 0, 1, 1),
      make_entry("sparse_few", "sparse", 0.03, 0, 1, 2),
      make_entry("sparse_dense", "sparse", 0.6, 0, 1, 3),
      make_entry("bitmap_plain", "bitmap", 0.2, 0, 1, 4),
      make_entry("bitmap_shake_up_positive", "auto", 0.05, 1, 1, 5),
      make_entry("bitmap_shake_up_negative", "auto", 0.05, 2, 4, 6),
      make_entry("compressed_few", "compressed", 0.02, 0, 1, 7),
      make_entry("compressed_dense", "compressed", 0.3, 0, 1, 8),
      make_entry("auto_switched_to_bitmap", "auto", 0.9, 0, 1, 9),
      make_exact_entry("exact_flush", 7, 10),
      make_values_entry("values_relay", 11),
  };
}

}  // namespace gradshare::codec::fuzz
