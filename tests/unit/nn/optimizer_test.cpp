// optimizer_test.cpp: two steps of every optimizer against values worked out by hand (in the
// comments), on gradients tiled over 13 elements so the AVX (8), SSE (4) and scalar parts of
// the loops are all checked; state layout, step counting, and apply_update.
#include "nn/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/errors.h"

namespace gradshare::nn {
namespace {

constexpr std::size_t kCount = 13;  // 8 AVX lanes (Adam), then SSE blocks of 4, then scalar

// Tiles the two-element pattern (a, b) over kCount elements.
std::vector<float> tile(float a, float b) {
  std::vector<float> v(kCount);
  for (std::size_t i = 0; i < kCount; ++i) v[i] = i % 2 == 0 ? a : b;
  return v;
}

struct Steps {
  std::vector<float> first, second;
};

// Runs g1 = (1, -2) then g2 = (0.5, 1) with the given learning rate; params (2, -1).
Steps run(const config::OptimizerConfig& config, double lr) {
  auto optimizer = Optimizer::create(config, kCount);
  const std::vector<float> params = tile(2.0f, -1.0f);
  Steps out{std::vector<float>(kCount), std::vector<float>(kCount)};
  optimizer->compute_update(tile(1.0f, -2.0f), params, out.first, lr);
  EXPECT_EQ(optimizer->step(), 1);
  optimizer->compute_update(tile(0.5f, 1.0f), params, out.second, lr);
  EXPECT_EQ(optimizer->step(), 2);
  return out;
}

void expect_tiled(const std::vector<float>& got, double a, double b, double tolerance = 1e-7) {
  for (std::size_t i = 0; i < kCount; ++i)
    EXPECT_NEAR(got[i], i % 2 == 0 ? a : b, tolerance) << "element " << i;
}

config::OptimizerConfig named(const char* type) {
  config::OptimizerConfig c;
  c.type = type;
  return c;
}

TEST(Optimizer, Sgd) {
  const Steps s = run(named("sgd"), 0.1);
  expect_tiled(s.first, 0.1, -0.2);
  expect_tiled(s.second, 0.05, 0.1);
}

TEST(Optimizer, Momentum) {
  config::OptimizerConfig c = named("momentum");
  c.momentum = 0.9;
  const Steps s = run(c, 0.1);
  expect_tiled(s.first, 0.1, -0.2);     // v = g
  expect_tiled(s.second, 0.14, -0.08);  // v = 0.9 (1, -2) + (0.5, 1) = (1.4, -0.8)
}

TEST(Optimizer, Nesterov) {
  config::OptimizerConfig c = named("nesterov");
  c.momentum = 0.9;
  const Steps s = run(c, 0.1);
  expect_tiled(s.first, 0.19, -0.38);    // 0.1 (g + 0.9 v), v = g
  expect_tiled(s.second, 0.176, 0.028);  // v = (1.4, -0.8): 0.1 ((0.5, 1) + 0.9 v)
}

TEST(Optimizer, Adam) {
  config::OptimizerConfig c = named("adam");
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.epsilon = 1e-8;
  const Steps s = run(c, 0.01);
  // Step 1: mhat = g, vhat = g^2, so u = lr g / |g| = (0.01, -0.01).
  expect_tiled(s.first, 0.01, -0.01);
  // Step 2: m = (0.14, -0.08), v = (0.001249, 0.004996); mhat = m / 0.19,
  // vhat = v / 0.001999 -> u = 0.01 (0.7368421 / 0.7904507, -0.4210526 / 1.5809015).
  expect_tiled(s.second, 0.0093217963, -0.0026633704, 2e-8);
}

TEST(Optimizer, AdamWAddsDecoupledDecay) {
  config::OptimizerConfig c = named("adamw");
  c.weight_decay = 0.1;
  const Steps s = run(c, 0.01);
  // Adam's update plus lr * 0.1 * params (2, -1).
  expect_tiled(s.first, 0.01 + 0.002, -0.01 - 0.001);
  expect_tiled(s.second, 0.0093217963 + 0.002, -0.0026633704 - 0.001, 2e-8);
}

TEST(Optimizer, RmsProp) {
  config::OptimizerConfig c = named("rmsprop");
  c.rms_decay = 0.9;
  c.epsilon = 1e-8;
  const Steps s = run(c, 0.01);
  // s = (0.1, 0.4): u = 0.01 (1 / 0.3162278, -2 / 0.6324555)
  expect_tiled(s.first, 0.0316227756, -0.0316227761, 1e-8);
  // s = 0.9 (0.1, 0.4) + 0.1 (0.25, 1) = (0.115, 0.46): u = 0.01 (0.5 / 0.3391165, 1 / 0.6782330)
  expect_tiled(s.second, 0.0147441952, 0.0147441954, 1e-8);
}

TEST(Optimizer, AdaGrad) {
  config::OptimizerConfig c = named("adagrad");
  c.epsilon = 1e-8;
  const Steps s = run(c, 0.1);
  expect_tiled(s.first, 0.1, -0.1);                    // s = (1, 4)
  expect_tiled(s.second, 0.0447213591, 0.0447213593);  // s = (1.25, 5): 0.1 (0.5/1.118, 1/2.236)
}

TEST(Optimizer, StateHasTheParameterLayoutAndCanBeOverwritten) {
  struct Expected {
    const char* type;
    std::vector<std::string> names;
  };
  const std::vector<Expected> all = {{"sgd", {}},
                                     {"momentum", {"velocity"}},
                                     {"nesterov", {"velocity"}},
                                     {"adam", {"m", "v"}},
                                     {"adamw", {"m", "v"}},
                                     {"rmsprop", {"mean_square"}},
                                     {"adagrad", {"sum_squares"}}};
  for (const Expected& e : all) {
    auto optimizer = Optimizer::create(named(e.type), kCount);
    EXPECT_EQ(optimizer->type(), e.type);
    const auto state = optimizer->state();
    ASSERT_EQ(state.size(), e.names.size()) << e.type;
    for (std::size_t i = 0; i < state.size(); ++i) {
      EXPECT_EQ(state[i].name, e.names[i]);
      EXPECT_EQ(state[i].values.size(), kCount);
    }
  }
  // Overwriting the state (as averaging or recovery does) changes the next update.
  config::OptimizerConfig c = named("momentum");
  c.momentum = 0.5;
  auto optimizer = Optimizer::create(c, kCount);
  const auto velocity = optimizer->state();
  for (float& v : velocity[0].values) v = 2.0f;
  std::vector<float> update(kCount);
  optimizer->compute_update(tile(1.0f, 1.0f), {}, update, 1.0);
  expect_tiled(update, 2.0, 2.0);  // v = 0.5 * 2 + 1
  auto copy = optimizer->clone();
  EXPECT_EQ(copy->step(), 1);
  copy->set_step(10);
  EXPECT_EQ(copy->step(), 10);
  EXPECT_EQ(optimizer->step(), 1);
}

TEST(Optimizer, UnknownTypeAndWrongSizes) {
  EXPECT_THROW(Optimizer::create(named("lbfgs"), 3), core::UserError);
  auto optimizer = Optimizer::create(named("sgd"), 3);
  std::vector<float> g(3), u(2);
  EXPECT_THROW(optimizer->compute_update(g, {}, u, 0.1), core::RuntimeError);
}

TEST(Optimizer, ApplyUpdateSubtracts) {
  std::vector<float> params = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  apply_update(params, std::vector<float>{0.5f, -1.0f, 0.0f, 4.0f, 1.0f});
  EXPECT_EQ(params, (std::vector<float>{0.5f, 3.0f, 3.0f, 0.0f, 4.0f}));
}

}  // namespace
}  // namespace gradshare::nn
