// downpour_averaging_test.cpp: the pieces of parameter averaging and Downpour that need no
// MPI job: shard ranges, window layouts, ack words, reports, a shard's updater, the averaging
// buffer and its fingerprint. The protocols themselves run in tests/mpi/training.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment_config.h"
#include "core/errors.h"
#include "nn/optimizer.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/averaging/parameter_averaging.h"

namespace gradshare::train {
namespace {

TEST(ShardRange, CoversTheVectorContiguouslyWithSizesWithinOne) {
  for (std::size_t n : {1u, 7u, 10u, 235146u}) {
    for (int k = 1; k <= 5 && static_cast<std::size_t>(k) <= n; ++k) {
      std::size_t next = 0, smallest = n, largest = 0;
      for (int s = 0; s < k; ++s) {
        const ShardRange r = shard_range(n, k, s);
        EXPECT_EQ(r.begin, next) << n << " " << k << " " << s;
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1u);
      EXPECT_GE(smallest, 1u);
    }
  }
}

TEST(ShardLayout, RegionsAreLineAlignedAndDisjoint) {
  const ShardLayout layout(1001, 3, 4004 + 72);
  EXPECT_EQ(ShardLayout::seqlock_offset(), 0u);
  EXPECT_EQ(ShardLayout::parameters_offset(), kLineBytes);
  std::size_t previous_end = ShardLayout::parameters_offset() + 1001 * sizeof(float);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(layout.slot_offset(w) % kLineBytes, 0u);
    EXPECT_GE(layout.slot_offset(w), previous_end);
    EXPECT_EQ(layout.payload_offset(w), layout.slot_offset(w) + kLineBytes);
    previous_end = layout.payload_offset(w) + layout.payload_capacity();
  }
  EXPECT_GE(layout.window_bytes(), previous_end);
  EXPECT_THROW(layout.slot_offset(3), core::RuntimeError);
}

config::ExperimentConfig downpour_config(int servers, bool encode) {
  config::ExperimentConfig config;
  config.training.strategy = "downpour";
  config.downpour.servers = servers;
  config.downpour.encode = encode;
  return config;
}

TEST(DownpourLayout, RanksAndWindowSizes) {
  const DownpourLayout layout(downpour_config(2, false), 1000, 5);
  EXPECT_EQ(layout.servers(), 2);
  EXPECT_EQ(layout.workers(), 3);
  EXPECT_TRUE(layout.is_server(1));
  EXPECT_FALSE(layout.is_server(2));
  EXPECT_EQ(layout.worker_rank(0), 2);
  EXPECT_EQ(layout.worker_index(4), 2);
  EXPECT_EQ(layout.shard(1).end, 1000u);
  EXPECT_EQ(layout.shard_layout(0).payload_capacity(), 500 * sizeof(float));
  EXPECT_EQ(layout.window_bytes(0), layout.shard_layout(0).window_bytes());
  EXPECT_EQ(layout.window_bytes(3), 2 * kLineBytes);  // one ack line per server
  EXPECT_EQ(DownpourLayout::ack_offset(1), kLineBytes);
}

TEST(DownpourLayout, EncodedSlotsHoldTheLargestMessage) {
  auto config = downpour_config(1, true);
  config.encoding.format = "sparse";  // 4 bytes per entry plus the header: above dense
  config.encoding.max_message_sparsity = 1.0;  // uncapped: every entry may fire
  const DownpourLayout layout(config, 1000, 3);
  EXPECT_GT(layout.shard_layout(0).payload_capacity(), 1000 * sizeof(float));
}

TEST(DownpourLayout, NeedsAWorkerAndAParameterPerServer) {
  EXPECT_THROW(DownpourLayout(downpour_config(3, false), 1000, 3), core::UserError);
  EXPECT_THROW(DownpourLayout(downpour_config(4, false), 3, 6), core::UserError);
}

// Applies a dense push of `value` everywhere from `worker`, pulled at version `base`; returns
// the ack word.
std::uint64_t push(ShardUpdater& updater, std::vector<float>& shard, int worker, std::uint64_t seq,
                   std::uint64_t base, float value) {
  const std::vector<float> delta(shard.size(), value);
  PushHeader header{seq, static_cast<std::uint64_t>(PushFormat::kDense),
                    delta.size() * sizeof(float), base};
  const std::span<const std::uint8_t> payload(reinterpret_cast<const std::uint8_t*>(delta.data()),
                                              header.bytes);
  const std::uint64_t ack = updater.prepare(worker, header, payload, shard);
  updater.apply(shard);
  return ack;
}

TEST(ShardUpdater, ScalesAStalePushByItsAgeDownToOneOverTheWorkers) {
  // A push's age counts the other workers' pushes applied since its base.
  for (const char* rule : {"scale", "full"}) {
    auto config = downpour_config(1, false);
    config.downpour.combine = "sum";
    config.downpour.stale_pushes = rule;
    const DownpourLayout layout(config, 4, 4);  // 1 server, 3 workers; sgd at lr 1: p -= d
    ShardUpdater updater(layout, 0, config);
    std::vector<float> shard(4, 0.0f);
    const bool scale = std::string(rule) == "scale";
    EXPECT_EQ(ack_age(push(updater, shard, 0, 1, 0, 1.0f)), 0u);  // fresh: a full step
    EXPECT_EQ(ack_age(push(updater, shard, 1, 1, 0, 1.0f)), 1u);  // one version old: full
    EXPECT_FLOAT_EQ(shard[0], -2.0f) << rule;
    EXPECT_EQ(ack_age(push(updater, shard, 2, 1, 0, 4.0f)), 2u);  // two others' pushes since
    EXPECT_FLOAT_EQ(shard[1], scale ? -4.0f : -6.0f) << rule;     // at 1/2
    // Three versions since its base, one of them its own: age 2.
    EXPECT_EQ(ack_age(push(updater, shard, 1, 2, 0, 3.0f)), 2u);
    EXPECT_FLOAT_EQ(shard[2], scale ? -5.5f : -9.0f) << rule;
    EXPECT_EQ(ack_age(push(updater, shard, 0, 2, 0, 6.0f)), 3u);  // 4 versions, 1 its own
    EXPECT_FLOAT_EQ(shard[3], scale ? -7.5f : -15.0f) << rule;    // at 1/3
    EXPECT_EQ(ack_age(push(updater, shard, 2, 2, 0, 6.0f)), 4u);  // 5 versions, 1 its own
    EXPECT_FLOAT_EQ(shard[0], scale ? -9.5f : -21.0f) << rule;    // 1/4, but at least 1/3
    EXPECT_EQ(updater.version(), 6u);
  }
}

TEST(ShardUpdater, AWorkersOwnPushesAreNoStaleness) {
  // A worker whose pulls lag (base 0 throughout) while nobody else pushes: its replica holds
  // every push it made, so each is applied in full (before, the third was at 1/2, the fourth
  // at 1/3, and a lone worker trained on at a fraction of its learning rate).
  auto config = downpour_config(1, false);
  config.downpour.combine = "sum";
  const DownpourLayout layout(config, 4, 4);
  ShardUpdater updater(layout, 0, config);
  std::vector<float> shard(4, 0.0f);
  for (std::uint64_t seq = 1; seq <= 4; ++seq)
    EXPECT_EQ(ack_age(push(updater, shard, 0, seq, 0, 1.0f)), 0u) << "push " << seq;
  EXPECT_FLOAT_EQ(shard[0], -4.0f);
  // Another worker's push from base 0 is 4 versions old; the first worker's next one, from a
  // pull at version 2, has one other push (the second worker's) past it.
  EXPECT_EQ(ack_age(push(updater, shard, 1, 1, 0, 1.0f)), 4u);
  EXPECT_EQ(ack_age(push(updater, shard, 0, 5, 2, 1.0f)), 1u);
}

TEST(ShardUpdater, ScalesNothingUnderCombineMean) {
  auto config = downpour_config(1, false);
  config.downpour.combine = "mean";  // every push at lr / workers already
  const DownpourLayout layout(config, 4, 3);
  ShardUpdater updater(layout, 0, config);
  std::vector<float> shard(4, 0.0f);
  push(updater, shard, 0, 1, 0, 1.0f);
  push(updater, shard, 1, 1, 0, 1.0f);
  push(updater, shard, 0, 2, 0, 2.0f);  // 2 versions old: still at lr / 2
  EXPECT_FLOAT_EQ(shard[0], -2.0f);
}

TEST(ShardUpdater, AppliesAPushAtOneOverTheRootOfTheWorkersUnderCombineSqrt) {
  auto config = downpour_config(1, false);
  config.downpour.combine = "sqrt";
  const DownpourLayout layout(config, 4, 5);  // 1 server, 4 workers: a fresh push counts 1/2
  ShardUpdater updater(layout, 0, config);
  std::vector<float> shard(4, 0.0f);
  push(updater, shard, 0, 1, 0, 1.0f);  // fresh
  push(updater, shard, 1, 1, 0, 1.0f);  // one version old
  EXPECT_FLOAT_EQ(shard[0], -1.0f);
  push(updater, shard, 2, 1, 0, 3.0f);  // two versions old: still 1/2
  EXPECT_FLOAT_EQ(shard[0], -2.5f);
  push(updater, shard, 3, 1, 0, 3.0f);  // three: 1/3
  EXPECT_FLOAT_EQ(shard[0], -3.5f);
}

TEST(PushCombine, AutoIsSqrtUnderAnAdaptiveOptimizerAndSumUnderSgd) {
  auto config = downpour_config(1, false);
  ASSERT_EQ(config.downpour.combine, "auto");
  for (const char* type : {"adam", "adamw", "rmsprop", "adagrad"}) {
    config.optimizer.type = type;
    EXPECT_EQ(push_combine(config), "sqrt") << type;
  }
  for (const char* type : {"sgd", "momentum", "nesterov"}) {
    config.optimizer.type = type;
    EXPECT_EQ(push_combine(config), "sum") << type;
  }
  config.downpour.combine = "mean";
  EXPECT_EQ(push_combine(config), "mean");  // as set
}

TEST(PushWeight, CombineSetsTheMostAndAStalePushCountsOneOverItsAgeDownToTheMean) {
  auto config = downpour_config(1, false);
  const std::vector<std::uint64_t> ages = {0, 1, 2, 3, 4, 8, 100};
  const std::vector<std::pair<std::string, std::vector<double>>> expected = {
      {"sum", {1.0, 1.0, 0.5, 1.0 / 3, 0.25, 0.25, 0.25}},
      {"sqrt", {0.5, 0.5, 0.5, 1.0 / 3, 0.25, 0.25, 0.25}},
      {"mean", {0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}}};
  for (const auto& [combine, weights] : expected) {
    config.downpour.combine = combine;
    config.downpour.stale_pushes = "scale";
    const PushWeight scaled(config, 4);
    config.downpour.stale_pushes = "full";
    const PushWeight full(config, 4);
    for (std::size_t i = 0; i < ages.size(); ++i) {
      EXPECT_DOUBLE_EQ(scaled(ages[i]), weights[i]) << combine << " age " << ages[i];
      EXPECT_DOUBLE_EQ(full(ages[i]), weights[0]) << combine << " age " << ages[i];
    }
    EXPECT_EQ(scaled.by_age(), combine != "mean") << combine;
    EXPECT_FALSE(full.by_age()) << combine;
  }
}

TEST(WorkerMomentum, CompensatedLowersAdamsBeta1ByOneMinusOneOverTheWorkers) {
  config::ExperimentConfig config;
  config.downpour.momentum = "compensate";
  config.optimizer.type = "adam";
  config.optimizer.beta1 = 0.9;
  EXPECT_NEAR(worker_optimizer_config(config, 4).optimizer.beta1, 0.15, 1e-12);
  EXPECT_NE(worker_momentum_line(config, 4).find("beta1 0.15, lowered from 0.9"),
            std::string::npos)
      << worker_momentum_line(config, 4);
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 1).optimizer.beta1, 0.9);  // no asynchrony
  EXPECT_EQ(worker_momentum_line(config, 1), "");
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 20).optimizer.beta1, 0.0);  // never below 0
  config.optimizer.type = "adam";
  config.downpour.momentum = "as_set";
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.beta1, 0.9);
}

// SGD's momentum (and Nesterov's) sizes its step, learning_rate / (1 - momentum) over many
// steps: compensated, the momentum is lowered as Adam's beta1 and the learning rate raised so
// that this stays as set (and the schedule's floor with it).
TEST(WorkerMomentum, CompensatedSgdKeepsTheStepOverManySteps) {
  config::ExperimentConfig config;
  config.downpour.momentum = "compensate";
  config.optimizer.learning_rate = 0.01;
  config.optimizer.min_learning_rate = 0.001;
  config.optimizer.momentum = 0.9;
  for (const char* type : {"momentum", "nesterov"}) {
    config.optimizer.type = type;
    const auto& optimizer = worker_optimizer_config(config, 4).optimizer;
    EXPECT_NEAR(optimizer.momentum, 0.15, 1e-12) << type;
    EXPECT_NEAR(optimizer.learning_rate / (1 - optimizer.momentum), 0.1, 1e-12) << type;
    EXPECT_NEAR(optimizer.min_learning_rate, 0.0085, 1e-12) << type;
    EXPECT_NE(worker_momentum_line(config, 4).find(
                  "momentum 0.15, lowered from 0.9 by the momentum 4 asynchronous workers "
                  "imply, and learning rate 0.085, raised from 0.01"),
              std::string::npos)
        << worker_momentum_line(config, 4);
  }
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 1).optimizer.learning_rate, 0.01);
  EXPECT_EQ(worker_momentum_line(config, 1), "");
  // 20 workers imply more than 0.9: no momentum, lr / (1 - 0.9) as the step.
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 20).optimizer.momentum, 0.0);
  EXPECT_NEAR(worker_optimizer_config(config, 20).optimizer.learning_rate, 0.1, 1e-12);
  config.optimizer.type = "sgd";  // no momentum to lower
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.learning_rate, 0.01);
  EXPECT_EQ(worker_momentum_line(config, 4), "");
  config.optimizer.type = "momentum";
  config.downpour.momentum = "as_set";
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.momentum, 0.9);
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.learning_rate, 0.01);
}

// combine: sum adds the workers' pushes up: each clips at clip_norm / sqrt(workers); under
// mean (each push already lr / workers) as set.
TEST(WorkerClipping, SummedWorkersClipAsOneOfThem) {
  config::ExperimentConfig config;
  config.optimizer.clip_norm = 2.0;
  config.downpour.combine = "sum";
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.clip_norm, 1.0);
  config.downpour.combine = "mean";
  EXPECT_DOUBLE_EQ(worker_optimizer_config(config, 4).optimizer.clip_norm, 2.0);
}

TEST(AckWord, PacksSeqAndSaturatedAge) {
  const std::uint64_t word = pack_ack(12345, 17);
  EXPECT_EQ(ack_seq(word), 12345u);
  EXPECT_EQ(ack_age(word), 17u);
  EXPECT_EQ(ack_age(pack_ack(1, 1ull << 40)), 0xFFFFFFFFull);
  EXPECT_THROW(pack_ack(1ull << 32, 0), core::RuntimeError);
}

TEST(DownpourReport, AddsSumsAndKeepsTheMaximumAge) {
  DownpourReport a, b;
  a.steps = 3;
  a.age_sum = 4;
  a.ages = 2;
  a.age_max = 3;
  a.seconds = 0.5;
  b.steps = 2;
  b.age_sum = 1;
  b.ages = 1;
  b.age_max = 1;
  b.seconds = 0.25;
  a.add(b);
  EXPECT_EQ(a.steps, 5);
  EXPECT_EQ(a.ages, 3);
  EXPECT_DOUBLE_EQ(a.age_sum, 5);
  EXPECT_EQ(a.age_max, 3);
  EXPECT_DOUBLE_EQ(a.seconds, 0.75);
}

TEST(AveragingBuffer, MovesParametersAndOptimizerState) {
  config::OptimizerConfig settings;
  settings.type = "adam";
  auto adam = nn::Optimizer::create(settings, 4);
  std::vector<float> parameters = {1, 2, 3, 4};
  std::vector<float> gradient = {0.5f, -0.5f, 1, -1};
  std::vector<float> update(4);
  adam->compute_update(gradient, parameters, update, 0.1);  // non-zero m and v

  AveragingBuffer buffer(parameters, adam.get());
  EXPECT_EQ(buffer.bytes(), 3 * 4 * sizeof(float));
  auto values = buffer.gather();
  ASSERT_EQ(values.size(), 12u);
  EXPECT_EQ(values[2], 3.0f);
  const float m0 = adam->state()[0].values[0];
  EXPECT_EQ(values[4], m0);
  // Pretend three workers summed the same state: the mean is the state itself.
  for (auto& v : values) v *= 3;
  buffer.scatter_mean(3);
  EXPECT_EQ(parameters, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(adam->state()[0].values[0], m0);
  // A different sum lands in place.
  values = buffer.gather();
  values[0] = 10;
  values[11] = 6;
  buffer.scatter_mean(2);
  EXPECT_EQ(parameters[0], 5.0f);
  EXPECT_EQ(adam->state()[1].values[3], 3.0f);
}

TEST(AveragingBuffer, WithoutOptimizerOnlyParameters) {
  std::vector<float> parameters = {2, 4};
  AveragingBuffer buffer(parameters, nullptr);
  EXPECT_EQ(buffer.gather().size(), 2u);
  buffer.scatter_mean(2);
  EXPECT_EQ(parameters, (std::vector<float>{1, 2}));
}

TEST(Fingerprint, ChangesWithAnyBit) {
  std::vector<float> a = {1.0f, -0.0f, 3.5f};
  std::vector<float> b = a;
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  b[1] = 0.0f;  // equal as numbers, different bits
  EXPECT_NE(fingerprint(a), fingerprint(b));
  b = a;
  std::uint32_t bits;
  std::memcpy(&bits, &b[2], sizeof bits);
  bits ^= 1;
  std::memcpy(&b[2], &bits, sizeof bits);
  EXPECT_NE(fingerprint(a), fingerprint(b));
}

}  // namespace
}  // namespace gradshare::train
