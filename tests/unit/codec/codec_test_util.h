// codec_test_util.h: helpers shared by the codec tests: configs, random vectors, decoding a
// message into a dense vector, and re-sealing a hand-edited message.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/message.h"
#include "config/experiment_config.h"
#include "core/rng.h"
#include "kernels/cpu/codec_crc32c.h"

namespace gradshare::codec::testing {

inline config::EncodingConfig make_config(const std::string& format = "auto",
                                          const std::string& algorithm = "adaptive",
                                          const std::string& residual = "none") {
  config::EncodingConfig config;
  config.format = format;
  config.threshold_algorithm = algorithm;
  config.residual = residual;
  config.initial_threshold = 1e-4;  // a known tau (the default, 0, calibrates at the first step)
  config.warmup_epochs = 0.0;       // the configured band from the first step (the sparsity
                                    // warm-up has tests of its own)
  config.min_quanta = 0;            // the band as configured however small the test's vector
  return config;
}

inline std::vector<float> normal_vector(std::size_t n, float scale, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * rng.normal();
  return v;
}

// The values a message carries, as a dense vector (each index appears at most once, so the
// float sums are exact).
inline std::vector<float> decode_dense(const std::vector<std::uint8_t>& message, std::size_t n) {
  std::vector<float> dense(n, 0.0f);
  std::string error;
  if (!accumulate_message(message, dense, &error)) {
    throw std::runtime_error("test message does not decode: " + error);
  }
  return dense;
}

// Recomputes the checksum after a test edited a message's bytes.
inline void reseal(std::vector<std::uint8_t>& message) {
  std::uint32_t crc = kernels::cpu::crc32c(0, message.data(), kChecksumOffset);
  crc = kernels::cpu::crc32c(crc, message.data() + kHeaderBytes, message.size() - kHeaderBytes);
  std::memcpy(message.data() + kChecksumOffset, &crc, 4);
}

template <class T>
void poke(std::vector<std::uint8_t>& message, std::size_t offset, T value) {
  std::memcpy(message.data() + offset, &value, sizeof value);
}

template <class T>
T peek(const std::vector<std::uint8_t>& message, std::size_t offset) {
  T value;
  std::memcpy(&value, message.data() + offset, sizeof value);
  return value;
}

}  // namespace gradshare::codec::testing
