// encoder_property_test.cpp: "nothing is lost", checked on random and adversarial updates for
// every format (and with shake-ups):
//   per step     decoded(message) + r_after == r_before + u, within one ulp of |r_before + u|
//                (the add r + u rounds once, the subtraction of the quantum at most once)
//   over steps   sum(decoded) + r_final == sum(u), within the per-step bounds summed (plus
//                2^-50 of the magnitudes for the test's own double sums)
// The residual post-processor is off here: clipping is the one deliberate loss, tested with
// its accounting in residual_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "codec/encoder.h"
#include "codec_test_util.h"
#include "core/rng.h"

namespace gradshare::codec {
namespace {

using testing::decode_dense;
using testing::make_config;

enum class Data { kRandom, kAllBelow, kAllFarAbove, kExactlyTau, kDenormal, kAlternating };

std::string data_name(Data data) {
  switch (data) {
    case Data::kRandom:
      return "random";
    case Data::kAllBelow:
      return "all_below_tau";
    case Data::kAllFarAbove:
      return "all_far_above_tau";
    case Data::kExactlyTau:
      return "exactly_tau";
    case Data::kDenormal:
      return "denormals";
    case Data::kAlternating:
      return "alternating_signs";
  }
  return "?";
}

std::vector<float> make_update(Data data, std::size_t n, int step, float tau, core::Rng& rng) {
  std::vector<float> u(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float sign = rng.below(2) == 0 ? 1.0f : -1.0f;
    switch (data) {
      case Data::kRandom:
        u[i] = 0.7f * tau * rng.normal();
        break;
      case Data::kAllBelow:
        u[i] = 1e-3f * tau * rng.uniform(-1.0f, 1.0f);
        break;
      case Data::kAllFarAbove:
        u[i] = sign * 1000.0f * tau * rng.uniform(1.0f, 2.0f);
        break;
      case Data::kExactlyTau:
        u[i] = sign * tau;
        break;
      case Data::kDenormal:
        u[i] = sign * 1e-40f * rng.uniform(0.0f, 1.0f);
        break;
      case Data::kAlternating:
        u[i] = ((i + static_cast<std::size_t>(step)) % 2 == 0 ? 1.5f : -1.5f) * tau;
        break;
    }
  }
  return u;
}

// Runs `steps` encode steps and checks both properties.
void check_nothing_lost(Encoder& encoder, Data data, int steps, std::uint64_t seed) {
  const std::size_t n = encoder.parameter_count();
  core::Rng rng(seed);
  std::vector<double> sum_u(n, 0.0), sum_decoded(n, 0.0), bound(n, 0.0), magnitude(n, 0.0);
  std::vector<std::uint8_t> message;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> u = make_update(data, n, step, encoder.threshold(), rng);
    const std::vector<float> before(encoder.residual().begin(), encoder.residual().end());
    const EncodeStats stats = encoder.encode(u, MessageMeta{}, message);
    ASSERT_EQ(stats.bytes, message.size());
    const std::vector<float> decoded = decode_dense(message, n);
    const auto after = encoder.residual();
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = static_cast<double>(before[i]) + u[i];
      const double got = static_cast<double>(decoded[i]) + after[i];
      const double one_ulp = std::ldexp(std::fabs(expected), -23);
      if (std::fabs(got - expected) > one_ulp) {  // (not ASSERT_LE: this loop runs 1e7 times)
        FAIL() << "step " << step << " element " << i << ": r_before " << before[i] << " u " << u[i]
               << " decoded " << decoded[i] << " r_after " << after[i];
      }
      sum_u[i] += u[i];
      sum_decoded[i] += decoded[i];
      bound[i] += one_ulp;
      magnitude[i] += std::fabs(u[i]) + std::fabs(decoded[i]);
    }
  }
  const auto final_residual = encoder.residual();
  for (std::size_t i = 0; i < n; ++i) {
    const double error = sum_decoded[i] + final_residual[i] - sum_u[i];
    if (std::fabs(error) > bound[i] + std::ldexp(magnitude[i], -50)) {
      FAIL() << "element " << i << " after " << steps << " steps: error " << error;
    }
  }
}

// format, shake-up period (0: off)
using FormatCase = std::tuple<std::string, std::int64_t>;

class NothingLost : public ::testing::TestWithParam<std::tuple<Data, FormatCase>> {};

TEST_P(NothingLost, ThousandStepsAdaptive) {
  const auto& [data, format_case] = GetParam();
  config::EncodingConfig config = make_config(std::get<0>(format_case));
  config.shake_up_every_steps = std::get<1>(format_case);
  Encoder encoder(config, 1000);
  check_nothing_lost(encoder, data, 1000, 11);
}

TEST_P(NothingLost, SingleParameter) {
  const auto& [data, format_case] = GetParam();
  config::EncodingConfig config = make_config(std::get<0>(format_case));
  config.shake_up_every_steps = std::get<1>(format_case);
  Encoder encoder(config, 1);
  check_nothing_lost(encoder, data, 1000, 12);
}

std::string case_name(const ::testing::TestParamInfo<NothingLost::ParamType>& info) {
  const Data data = std::get<0>(info.param);
  const FormatCase& format_case = std::get<1>(info.param);
  std::string name = data_name(data) + "_" + std::get<0>(format_case);
  if (std::get<1>(format_case) > 0) name += "_shake_up";
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    AllData, NothingLost,
    ::testing::Combine(::testing::Values(Data::kRandom, Data::kAllBelow, Data::kAllFarAbove,
                                         Data::kExactlyTau, Data::kDenormal, Data::kAlternating),
                       ::testing::Values(FormatCase{"auto", 0}, FormatCase{"sparse", 0},
                                         FormatCase{"bitmap", 0}, FormatCase{"compressed", 0},
                                         FormatCase{"auto", 3})),
    case_name);

TEST(NothingLostHuge, TenMillionParameters) {
  Encoder encoder(make_config("auto", "fixed"), 10'000'000);
  check_nothing_lost(encoder, Data::kRandom, 1, 13);
}

TEST(NothingLostHuge, TenMillionParametersAllFire) {
  Encoder encoder(make_config("auto"), 10'000'000);
  check_nothing_lost(encoder, Data::kAllFarAbove, 1, 14);
}

}  // namespace
}  // namespace gradshare::codec
