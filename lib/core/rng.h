// rng.h: a small, fast, serialisable random generator (xoshiro256**, seeded by splitmix64).
// Every random decision in gradshare (initialisation, shuffling, dropout) draws from an Rng
// derived from the run's seed, so runs are reproducible and the state can be checkpointed.
#pragma once

#include <array>
#include <cstdint>

namespace gradshare::core {

class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed = 0);
  // An independent stream for a purpose (e.g. stream 7 = shuffling, epoch e): same seed and
  // stream give the same sequence on every rank.
  static Rng derive(std::uint64_t seed, std::uint64_t stream, std::uint64_t substream = 0);

  std::uint64_t next();
  std::uint64_t operator()() { return next(); }
  static constexpr std::uint64_t min() { return 0; }
  static constexpr std::uint64_t max() { return ~std::uint64_t{0}; }

  double uniform();                      // [0, 1)
  float uniform(float low, float high);  // [low, high)
  float normal();                        // standard normal (Box-Muller)
  std::uint64_t below(std::uint64_t n);  // [0, n), unbiased

  std::array<std::uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<std::uint64_t, 4>& state) { s_ = state; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

}  // namespace gradshare::core
