// momentum_mask_test.cpp: encoding.momentum: mask clears the optimizer's momentum exactly where
// a message carried a quantum (SGD velocity, Adam's m), leaves the rest and Adam's v alone, and
// leaves an optimizer without momentum untouched.
#include "train/sharing/momentum_mask.h"

#include <gtest/gtest.h>

#include <vector>

#include "codec/encoder.h"
#include "config/experiment_config.h"
#include "nn/optimizer.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kN = 64;

// A message of an update whose every 4th element is above a threshold of 0.5.
std::vector<std::uint8_t> message_firing_every_fourth() {
  config::EncodingConfig encoding;
  encoding.initial_threshold = 0.5;
  encoding.warmup_epochs = 0.0;
  encoding.min_quanta = 0;
  encoding.min_sparsity = 1e-3;
  encoding.max_sparsity = 0.5;
  codec::Encoder encoder(encoding, kN);
  std::vector<float> update(kN, 0.01f);
  for (std::size_t i = 0; i < kN; i += 4) update[i] = (i % 8 == 0) ? 1.0f : -1.0f;
  std::vector<std::uint8_t> message;
  encoder.encode(update, codec::MessageMeta{1, 1, 1, 0, 0}, message);
  return message;
}

std::unique_ptr<nn::Optimizer> optimizer_of(const std::string& type) {
  config::OptimizerConfig config;
  config.type = type;
  auto optimizer = nn::Optimizer::create(config, kN);
  for (auto& buffer : optimizer->state())
    std::fill(buffer.values.begin(), buffer.values.end(), 0.25f);
  return optimizer;
}

void expect_cleared_every_fourth(nn::Optimizer& optimizer, const char* name) {
  for (const auto& buffer : optimizer.state()) {
    for (std::size_t i = 0; i < kN; ++i) {
      const bool cleared = buffer.name == name && i % 4 == 0;
      EXPECT_EQ(buffer.values[i], cleared ? 0.0f : 0.25f) << buffer.name << "[" << i << "]";
    }
  }
}

TEST(MomentumMask, ClearsSgdVelocityWhereTheMessageCarriedAQuantum) {
  auto optimizer = optimizer_of("momentum");
  MomentumMask mask(kN);
  EXPECT_EQ(mask.after_message(message_firing_every_fourth(), *optimizer), kN / 4);
  expect_cleared_every_fourth(*optimizer, "velocity");
}

TEST(MomentumMask, ClearsAdamsFirstMomentOnly) {
  auto optimizer = optimizer_of("adam");
  MomentumMask mask(kN);
  EXPECT_EQ(mask.after_message(message_firing_every_fourth(), *optimizer), kN / 4);
  expect_cleared_every_fourth(*optimizer, "m");
}

TEST(MomentumMask, LeavesAnOptimizerWithoutMomentumAlone) {
  auto optimizer = optimizer_of("rmsprop");
  MomentumMask mask(kN);
  EXPECT_EQ(mask.after_message(message_firing_every_fourth(), *optimizer), 0u);
  expect_cleared_every_fourth(*optimizer, "none");
}

}  // namespace
}  // namespace gradshare::train
