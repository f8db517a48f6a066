// encoder_test.cpp: the Encoder's format choice (smallest wins, the switch to a bitmap that
// keeps every quantum), determinism, header stamping, non-finite updates, back-pressure and
// config validation.
#include "codec/encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "codec_test_util.h"
#include "core/errors.h"
#include "core/rng.h"
#include "kernels/cpu/codec_isa.h"

namespace gradshare::codec {
namespace {

using testing::decode_dense;
using testing::make_config;

// An update under which exactly the chosen elements fire (u = +-2 tau, residual zero).
std::vector<float> firing_update(std::size_t n, double density, float tau, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> u(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    if (rng.uniform() < density) u[i] = (rng.below(2) == 0 ? 2.0f : -2.0f) * tau;
  }
  return u;
}

TEST(Encoder, AutoSendsTheSmallestEncoding) {
  const std::size_t n = 4096;
  for (const double density : {0.0, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.3, 0.45}) {
    SCOPED_TRACE("density " + std::to_string(density));
    const std::vector<float> u = firing_update(n, density, 1e-4f, 7);
    std::vector<std::uint8_t> auto_message;
    Encoder auto_encoder(make_config("auto", "fixed"), n);
    const EncodeStats auto_stats = auto_encoder.encode(u, {}, auto_message);
    std::size_t smallest = std::numeric_limits<std::size_t>::max();
    for (const std::string format : {"sparse", "bitmap", "compressed"}) {
      Encoder encoder(make_config(format, "fixed"), n);
      std::vector<std::uint8_t> message;
      const EncodeStats stats = encoder.encode(u, {}, message);
      EXPECT_EQ(stats.entries, auto_stats.entries);
      EXPECT_EQ(decode_dense(message, n), decode_dense(auto_message, n)) << format;
      EXPECT_TRUE(std::equal(encoder.residual().begin(), encoder.residual().end(),
                             auto_encoder.residual().begin()));
      smallest = std::min(smallest, message.size());
    }
    EXPECT_EQ(auto_message.size(), smallest);
  }
}

TEST(Encoder, CompressedWinsAtTrainingSparsities) {
  const std::size_t n = 100000;
  Encoder encoder(make_config("auto", "fixed"), n);
  std::vector<std::uint8_t> message;
  const EncodeStats stats = encoder.encode(firing_update(n, 1e-3, 1e-4f, 8), {}, message);
  EXPECT_EQ(stats.encoding, Encoding::kCompressed);
  // Rice-coded gaps of ~1000 take ~12.4 bits against sparse's 32.
  EXPECT_LT(static_cast<double>(message.size() - kHeaderBytes), 0.45 * 4 * stats.entries);
}

// More than n/2 quanta fire: the auto format switches to a bitmap mid-pass and must keep the
// quanta it already selected (DL4J subtracts them, then drops the sparse message).
TEST(Encoder, SwitchToBitmapKeepsEveryQuantum) {
  const std::size_t n = 1000;
  std::vector<float> u(n, 0.0f);
  for (std::size_t i = 0; i < 700; ++i) u[i] = (i % 3 == 0 ? -3.0f : 3.0f) * 1e-4f;
  Encoder auto_encoder(make_config("auto", "fixed"), n);
  Encoder sparse_encoder(make_config("sparse", "fixed"), n);
  std::vector<std::uint8_t> auto_message, sparse_message;
  const EncodeStats stats = auto_encoder.encode(u, {}, auto_message);
  sparse_encoder.encode(u, {}, sparse_message);
  EXPECT_EQ(stats.encoding, Encoding::kBitmap);
  EXPECT_EQ(stats.entries, 700u);
  EXPECT_EQ(decode_dense(auto_message, n), decode_dense(sparse_message, n));
  EXPECT_TRUE(std::equal(auto_encoder.residual().begin(), auto_encoder.residual().end(),
                         sparse_encoder.residual().begin()));
  for (std::size_t i = 0; i < 700; ++i)
    EXPECT_FLOAT_EQ(auto_encoder.residual()[i], (i % 3 == 0 ? -2.0f : 2.0f) * 1e-4f);
}

TEST(Encoder, EmptySelectionIsAValidMessage) {
  Encoder encoder(make_config(), 100);
  std::vector<std::uint8_t> message;
  const EncodeStats stats = encoder.encode(std::vector<float>(100, 0.0f), {}, message);
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.encoding, Encoding::kSparse);
  EXPECT_EQ(message.size(), kHeaderBytes);
  EXPECT_EQ(decode_dense(message, 100), std::vector<float>(100, 0.0f));
}

TEST(Encoder, ScalarAndAvx2KernelsGiveIdenticalMessages) {
  if (!kernels::cpu::isa_supported(kernels::cpu::Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const std::size_t n = 10007;
  for (const std::string format : {"auto", "sparse", "bitmap", "compressed"}) {
    config::EncodingConfig config = make_config(format, "adaptive", "clip");
    config.shake_up_every_steps = 4;
    Encoder scalar(config, n, cpu_kernels(kernels::cpu::Isa::kScalar));
    Encoder avx2(config, n, cpu_kernels(kernels::cpu::Isa::kAvx2));
    core::Rng rng(3);
    std::vector<std::uint8_t> a, b;
    for (int step = 0; step < 40; ++step) {
      std::vector<float> u(n);
      for (float& x : u) x = 3e-4f * rng.normal();
      scalar.encode(u, {}, a);
      avx2.encode(u, {}, b);
      ASSERT_EQ(a, b) << format << " step " << step;
    }
    EXPECT_TRUE(
        std::equal(scalar.residual().begin(), scalar.residual().end(), avx2.residual().begin()));
  }
}

TEST(Encoder, StampsTheHeader) {
  auto config = make_config();
  config.max_message_sparsity = 1.0;  // every element fires: no congestion cap here
  Encoder encoder(config, 50);
  std::vector<std::uint8_t> message;
  const MessageMeta meta{7, 3456789012ull, 99, 3, 0x00050000u};
  const EncodeStats stats = encoder.encode(std::vector<float>(50, 1.0f), meta, message);
  MessageHeader header;
  std::string error;
  ASSERT_TRUE(parse_header(message, 50, header, &error)) << error;
  EXPECT_EQ(header.origin, 7u);
  EXPECT_EQ(header.seq, 3456789012ull);
  EXPECT_EQ(header.iteration, 99u);
  EXPECT_EQ(header.epoch, 3u);
  EXPECT_EQ(header.flags, 0x00050000u);
  EXPECT_EQ(header.tau, stats.tau);
  EXPECT_EQ(header.entry_count, 50u);
  EXPECT_EQ(header.encoding, stats.encoding);
}

// A meta that does not fit the header throws before anything changes: nothing lost, nothing sent.
TEST(Encoder, RejectsMetaBeyondTheHeaderLimits) {
  config::EncodingConfig config = make_config("auto", "adaptive");
  Encoder encoder(config, 50);
  const std::vector<float> u = testing::normal_vector(50, 1e-3f, 11);
  std::vector<std::uint8_t> message;
  encoder.encode(u, MessageMeta{1, 1, 1, 0, 0}, message);
  const std::vector<float> residual(encoder.residual().begin(), encoder.residual().end());
  const float tau = encoder.threshold();
  std::vector<MessageMeta> bad(5, MessageMeta{1, 2, 2, 0, 0});
  bad[0].flags = 1;            // a codec bit
  bad[1].flags = 0x01000000u;  // beyond the caller's bits 16..23
  bad[2].epoch = static_cast<std::uint32_t>(kMaxEpoch) + 1;
  bad[3].seq = kMaxSeq + 1;
  bad[4].iteration = kMaxIteration + 1;
  const std::vector<std::string> named = {"flags", "flags", "epoch", "sequence", "iteration"};
  for (std::size_t c = 0; c < bad.size(); ++c) {
    try {
      encoder.encode(u, bad[c], message);
      ADD_FAILURE() << "meta " << c << " was encoded";
    } catch (const core::RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find(named[c]), std::string::npos) << e.what();
    }
    EXPECT_EQ(encoder.step(), 1);
    EXPECT_EQ(encoder.threshold(), tau);
    EXPECT_TRUE(std::equal(residual.begin(), residual.end(), encoder.residual().begin()));
  }
}

TEST(Encoder, SparseFormatStopsAtThePayloadLengthLimit) {
  // Thrown before the residual is allocated, so this costs no memory.
  const std::size_t too_many = kMaxPayloadBytes / 4 + 1;
  EXPECT_THROW(Encoder(make_config("sparse"), too_many), core::UserError);
}

TEST(Encoder, MessagesStayWithinMaxMessageBytes) {
  for (const std::string format : {"auto", "sparse", "bitmap", "compressed"}) {
    for (const std::size_t n : {1u, 7u, 8u, 9u, 1000u, 4099u}) {
      config::EncodingConfig config = make_config(format, "fixed");
      config.shake_up_every_steps = 2;
      Encoder encoder(config, n);
      std::vector<std::uint8_t> message;
      for (int step = 0; step < 2; ++step) {  // step 2 is a shake-up
        encoder.encode(std::vector<float>(n, 5e-3f), {}, message);
        EXPECT_LE(message.size(), encoder.max_message_bytes()) << format << " n " << n;
      }
    }
  }
}

// A NaN/Inf: error naming the index, no message, tau and step unchanged, the chunks before the
// bad one absorbed into the residual, the rest untouched.
void check_rejects(const std::string& format, std::int64_t shake_up, float bad_value,
                   std::size_t bad_index, double density) {
  SCOPED_TRACE(format + " bad " + std::to_string(bad_value) + " at " + std::to_string(bad_index));
  const std::size_t n = 3001;
  config::EncodingConfig config = make_config(format, "adaptive");
  config.shake_up_every_steps = shake_up;
  Encoder encoder(config, n);
  core::Rng rng(5);
  for (float& r : encoder.residual()) r = 0.5e-4f * rng.uniform(-1.0f, 1.0f);
  const std::vector<float> before(encoder.residual().begin(), encoder.residual().end());
  std::vector<float> u = firing_update(n, density, encoder.threshold(), 6);
  u[bad_index] = bad_value;
  std::vector<std::uint8_t> message(10, 1);
  const float tau = encoder.threshold();
  try {
    encoder.encode(u, {}, message);
    FAIL() << "no error";
  } catch (const core::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("element " + std::to_string(bad_index)), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(message.empty());
  EXPECT_EQ(encoder.threshold(), tau);
  EXPECT_EQ(encoder.step(), 0);
  const std::size_t chunk_start = bad_index - bad_index % 8;
  for (std::size_t i = 0; i < n; ++i) {
    const float r = encoder.residual()[i];
    if (i < chunk_start) {
      const double expected = static_cast<double>(before[i]) + u[i];
      ASSERT_LE(std::fabs(r - expected), std::ldexp(std::fabs(expected), -22)) << i;
    } else {
      ASSERT_EQ(r, before[i]) << i;
    }
  }
}

TEST(Encoder, RejectsNonFiniteUpdates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::string format : {"auto", "sparse", "bitmap", "compressed"}) {
    check_rejects(format, 0, nan, 1234, 0.1);
    check_rejects(format, 0, inf, 0, 0.1);
    check_rejects(format, 0, -inf, 3000, 0.1);
  }
  check_rejects("auto", 1, nan, 2001, 0.1);  // every step a shake-up
  check_rejects("auto", 0, nan, 2900, 0.9);  // after the switch to a bitmap
}

TEST(Encoder, RejectsResidualOverflow) {
  Encoder encoder(make_config("auto", "fixed"), 16);
  encoder.residual()[9] = 3e38f;
  std::vector<float> u(16, 0.0f);
  u[9] = 3e38f;
  std::vector<std::uint8_t> message;
  try {
    encoder.encode(u, {}, message);
    FAIL() << "no error";
  } catch (const core::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("residual element 9 overflowed"), std::string::npos)
        << e.what();
  }
}

TEST(Encoder, AccumulateKeepsQuantaInTheResidual) {
  const std::size_t n = 333;
  Encoder encoder(make_config("auto", "fixed"), n);
  const std::vector<float> u = testing::normal_vector(n, 1e-4f, 9);
  encoder.accumulate(u);
  encoder.accumulate(u);
  EXPECT_EQ(encoder.step(), 0);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(encoder.residual()[i], u[i] + u[i]);
  std::vector<float> bad = u;
  bad[100] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(encoder.accumulate(bad), core::RuntimeError);
  for (std::size_t i = 96; i < n; ++i) EXPECT_EQ(encoder.residual()[i], u[i] + u[i]);
}

// A backlog (back-pressure) under which nearly every element reaches tau: the message carries
// only the cap largest residual entries, at the raised tau of the cap-th, and nothing is lost.
TEST(Encoder, CongestionCapSendsTheLargestAndKeepsTheRest) {
  const std::size_t n = 10000;
  for (const std::string format : {"auto", "bitmap", "sparse", "compressed"}) {
    SCOPED_TRACE(format);
    auto config = make_config(format, "adaptive");
    config.initial_threshold = 1e-4;
    config.min_sparsity = 5e-4;
    config.max_sparsity = 1e-3;  // cap: 2 * 1e-3 * n = 20 quanta
    Encoder encoder(config, n);
    EXPECT_EQ(encoder.message_cap(), 20u);
    const std::vector<float> u = testing::normal_vector(n, 1e-3f, 21);
    encoder.accumulate(u);
    const std::vector<float> before(encoder.residual().begin(), encoder.residual().end());
    std::vector<std::uint8_t> message;
    const EncodeStats stats = encoder.encode(u, {}, message);
    EXPECT_TRUE(stats.capped);
    EXPECT_LE(stats.entries, 20u);
    EXPECT_GE(stats.entries, 19u);
    EXPECT_GT(stats.tau, 1e-4f);
    const std::vector<float> sent = decode_dense(message, n);
    for (std::size_t i = 0; i < n; ++i) {
      const float total = before[i] + u[i];
      // Conservation: sent + residual == backlog + update, to one rounding of the quantum.
      EXPECT_NEAR(sent[i] + encoder.residual()[i], total, 1e-9f + 1e-6f * std::fabs(total));
      if (sent[i] != 0.0f) {
        EXPECT_EQ(std::fabs(sent[i]), stats.tau);
        EXPECT_GE(std::fabs(total), stats.tau);
      } else {
        EXPECT_LT(std::fabs(total), stats.tau);
      }
    }
    // tau adapts to what fired at tau (nearly everything), not to the capped message.
    EXPECT_GT(encoder.threshold(), 1e-4f);
  }
}

// initial_threshold 0 (the default): the first step picks tau so that the band's middle,
// sqrt(min_sparsity * max_sparsity), of |r + u| fires; a checkpoint's 0 does the same again.
TEST(Encoder, CalibratesTauAtTheFirstStep) {
  const std::size_t n = 100000;
  auto config = make_config("auto", "adaptive");
  config.initial_threshold = 0.0;
  config.min_sparsity = 5e-4;
  config.max_sparsity = 2e-3;  // middle 1e-3: 100 of the 100000
  Encoder encoder(config, n);
  const std::vector<float> u = testing::normal_vector(n, 3e-2f, 31);
  std::vector<std::uint8_t> message;
  const EncodeStats first = encoder.encode(u, {}, message);
  EXPECT_FALSE(first.capped);
  EXPECT_GE(first.entries, 100u);
  EXPECT_LE(first.entries, 101u);
  std::vector<float> sorted(u.size());
  for (std::size_t i = 0; i < n; ++i) sorted[i] = std::fabs(u[i]);
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  EXPECT_EQ(first.tau, sorted[99]);
  // A resumed encoder with tau 0 calibrates again; a set tau is kept.
  encoder.set_threshold(0.0f);
  EXPECT_EQ(encoder.encode(u, {}, message).entries >= 100u, true);
  encoder.set_threshold(5e-2f);
  EXPECT_EQ(encoder.threshold(), 5e-2f);
  Encoder restored(config, n);
  restored.set_threshold(0.15f);  // a checkpoint's tau (5 sigma): no calibration, no cap
  EXPECT_EQ(restored.encode(u, {}, message).tau, 0.15f);
}

// Sparsity warm-up: at progress p of E epochs the band, the cap and the calibration are
// density^(1 - p/E) times denser; tau follows the band down as it narrows.
// encoding.min_quanta: a band whose lower end asks for fewer quanta than min_quanta is made
// denser by the factor that brings it there, for the whole run and on top of the warm-up.
TEST(Encoder, ASmallModelsBandIsMadeDenserToCarryMinQuanta) {
  const std::size_t n = 80000;
  auto config = make_config("sparse", "adaptive");
  config.min_sparsity = 2e-4;  // 16 quanta at the band's lower end
  config.max_sparsity = 8e-4;  // cap 2 * 8e-4 * n = 128
  config.min_quanta = 40;
  Encoder encoder(config, n);
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 2.5);
  EXPECT_EQ(encoder.message_cap(), 320u);
  encoder.set_training_progress(10.0);
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 2.5);
  // Steady updates settle at 2.5 times the band: at least 40 of the 80000 fire per message.
  std::vector<std::uint8_t> message;
  double sparsity = 0.0;
  for (int s = 0; s < 300; ++s)
    sparsity = encoder.encode(testing::normal_vector(n, 1e-3f, 300 + s), {}, message).sparsity;
  EXPECT_GE(sparsity, 2.5 * 2e-4 * 0.8) << "below the widened band";
  EXPECT_LE(sparsity, 2.5 * 8e-4 * 1.25) << "above the widened band";
  // With the warm-up the two factors multiply; a band that already asks for enough is kept.
  config.warmup_epochs = 1.0;
  config.warmup_density = 4.0;
  EXPECT_DOUBLE_EQ(Encoder(config, n).band_scale(), 10.0);
  config.warmup_epochs = 0.0;
  EXPECT_DOUBLE_EQ(Encoder(config, 400000).band_scale(), 1.0);  // 80 quanta at the lower end
  config.min_quanta = 0;
  EXPECT_DOUBLE_EQ(Encoder(config, n).band_scale(), 1.0);
  // A tiny vector: the band's upper end stops at 1/16 of it (scale 0.0625 / 8e-4 = 78.125),
  // however many quanta min_quanta asks for, warm-up or not.
  config.min_quanta = 40;
  EXPECT_DOUBLE_EQ(Encoder(config, 338).band_scale(), 78.125);
  config.warmup_epochs = 1.0;
  EXPECT_DOUBLE_EQ(Encoder(config, 338).band_scale(), 78.125);
  config.warmup_epochs = 0.0;
  config.threshold_algorithm = "target_sparsity";
  config.target_sparsity = 1e-4;  // 8 quanta
  config.min_quanta = 40;
  EXPECT_DOUBLE_EQ(Encoder(config, n).band_scale(), 5.0);
}

TEST(Encoder, SparsityWarmUpStartsDenserAndNarrowsToTheBand) {
  const std::size_t n = 100000;
  auto config = make_config("auto", "adaptive");
  config.initial_threshold = 0.0;
  config.min_sparsity = 5e-4;
  config.max_sparsity = 2e-3;  // band middle 1e-3, cap 2 * 2e-3 * n = 400
  config.warmup_epochs = 2.0;
  config.warmup_density = 4.0;
  Encoder encoder(config, n);
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 4.0);
  EXPECT_EQ(encoder.message_cap(), 1600u);
  // The largest message is bounded at the warm-up's start, whatever the progress now.
  auto sparse = config;
  sparse.format = "sparse";
  Encoder sparse_encoder(sparse, n);
  sparse_encoder.set_training_progress(10.0);
  EXPECT_EQ(sparse_encoder.message_cap(), 400u);
  EXPECT_EQ(sparse_encoder.max_message_bytes(), kHeaderBytes + 4 * 1600u);

  // Calibrated at 4 times the band's middle: 400 of the 100000 fire.
  std::vector<std::uint8_t> message;
  const EncodeStats first = encoder.encode(testing::normal_vector(n, 3e-2f, 41), {}, message);
  EXPECT_GE(first.entries, 400u);
  EXPECT_LE(first.entries, 401u);

  encoder.set_training_progress(1.0);  // halfway: twice as dense
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 2.0);
  EXPECT_EQ(encoder.message_cap(), 800u);
  encoder.set_training_progress(-1.0);  // (before the start: the start's band)
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 4.0);

  // Steady updates: during the warm-up the measured sparsity settles in the widened band,
  // after it in the configured one, tau higher.
  const auto settle = [&](double progress) {
    encoder.set_training_progress(progress);
    double sparsity = 0.0;
    for (int s = 0; s < 200; ++s)
      sparsity = encoder.encode(testing::normal_vector(n, 1e-3f, 100 + s), {}, message).sparsity;
    return sparsity;
  };
  const double warm = settle(0.0);
  const float warm_tau = encoder.threshold();
  EXPECT_GE(warm, 4 * 5e-4 * 0.9);
  EXPECT_LE(warm, 4 * 2e-3 * 1.1);
  const double after = settle(2.0);
  EXPECT_DOUBLE_EQ(encoder.band_scale(), 1.0);
  EXPECT_EQ(encoder.message_cap(), 400u);
  EXPECT_GE(after, 5e-4 * 0.9);
  EXPECT_LE(after, 2e-3 * 1.1);
  EXPECT_GT(encoder.threshold(), warm_tau);
}

// A transport that carries at most L bytes per message: the cap keeps every message within
// it, under the warm-up's widened cap too, so a message never waits for room it cannot get.
TEST(Encoder, CapKeepsMessagesWithinTheTransportsLimit) {
  const std::size_t n = 100000;
  for (const std::string format : {"auto", "sparse"}) {
    SCOPED_TRACE(format);
    auto config = make_config(format, "adaptive");
    config.max_sparsity = 2e-3;
    config.warmup_epochs = 1.0;
    config.warmup_density = 8.0;  // cap 8 * 2 * 2e-3 * n = 3200 quanta at the start
    Encoder encoder(config, n);
    const std::size_t limit = kHeaderBytes + 4 * 1000;
    encoder.limit_message_bytes(limit);
    EXPECT_EQ(encoder.message_cap(), 1000u);
    EXPECT_LE(encoder.max_message_bytes(), limit);
    std::vector<std::uint8_t> message;
    const EncodeStats stats = encoder.encode(firing_update(n, 0.05, 1e-4f, 9), {}, message);
    EXPECT_TRUE(stats.capped);
    EXPECT_LE(message.size(), limit);
    encoder.set_training_progress(2.0);  // after the warm-up the band's own cap, 400, is lower
    EXPECT_EQ(encoder.message_cap(), 400u);
  }
}

TEST(Encoder, NoCapBelowItOrWithFixedThresholds) {
  const std::size_t n = 4096;
  const std::vector<float> u = firing_update(n, 0.3, 1e-4f, 5);
  for (const std::string algorithm : {"fixed", "adaptive"}) {
    auto config = make_config("auto", algorithm);
    config.initial_threshold = 1e-4;
    if (algorithm == "adaptive") config.max_message_sparsity = 0.5;
    Encoder encoder(config, n);
    std::vector<std::uint8_t> message;
    const EncodeStats stats = encoder.encode(u, {}, message);
    EXPECT_FALSE(stats.capped) << algorithm;
    EXPECT_EQ(stats.tau, 1e-4f);
    EXPECT_EQ(stats.entries, static_cast<std::size_t>(std::count_if(
                                 u.begin(), u.end(), [](float x) { return x != 0.0f; })));
  }
}

TEST(Encoder, ValidatesItsConfig) {
  EXPECT_THROW(Encoder(make_config("zip"), 10), core::UserError);
  EXPECT_THROW(Encoder(make_config("auto", "magic"), 10), core::UserError);
  EXPECT_THROW(Encoder(make_config("auto", "adaptive", "shrink"), 10), core::UserError);
  EXPECT_THROW(Encoder(make_config(), 0), core::UserError);
  config::EncodingConfig config = make_config();
  config.min_sparsity = 0.1;
  config.max_sparsity = 0.01;
  EXPECT_THROW(Encoder(config, 10), core::UserError);
  config = make_config();
  config.initial_threshold = 10.0;  // above max_threshold 1.0
  EXPECT_THROW(Encoder(config, 10), core::UserError);
  config = make_config();
  config.shake_up_divisor = 0.5;
  EXPECT_THROW(Encoder(config, 10), core::UserError);
  config = make_config();
  config.warmup_density = 0.5;
  EXPECT_THROW(Encoder(config, 10), core::UserError);
  config = make_config();
  config.warmup_epochs = -1.0;
  EXPECT_THROW(Encoder(config, 10), core::UserError);
  try {
    config = make_config();
    config.min_sparsity = 0.5;
    config.max_sparsity = 0.1;
    Encoder encoder(config, 10);
  } catch (const core::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("encoding.min_sparsity"), std::string::npos);
  }
}

TEST(Encoder, CheckpointAccessors) {
  Encoder encoder(make_config(), 10);
  encoder.set_threshold(3e-3f);
  EXPECT_EQ(encoder.threshold(), 3e-3f);
  encoder.set_threshold(50.0f);  // clamped to max_threshold
  EXPECT_EQ(encoder.threshold(), 1.0f);
  encoder.set_step(41);
  std::vector<std::uint8_t> message;
  encoder.encode(std::vector<float>(10, 0.0f), {}, message);
  EXPECT_EQ(encoder.step(), 42);
}

}  // namespace
}  // namespace gradshare::codec
