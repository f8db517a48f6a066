// layer_gradient_test.cpp: every layer type and activation against the double-precision
// reference: forward values, and input and parameter gradients against central finite
// differences of f(x, params) = sum(r * layer(x, params)) for a random upstream gradient r.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "nn/layer_factory.h"
#include "reference.h"

namespace gradshare::nn {
namespace {

using testing::Vec;

std::vector<float> random_vector(std::size_t n, core::Rng& rng, float scale) {
  std::vector<float> v(n);
  for (float& x : v) x = scale * rng.normal();
  return v;
}

// |analytic - numeric| within 1e-3 relative (float arithmetic against a double reference).
void expect_close(const std::vector<float>& analytic, const Vec& numeric, const std::string& what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    EXPECT_NEAR(analytic[i], numeric[i], 1e-3 * (1.0 + std::fabs(numeric[i])))
        << what << " element " << i;
  }
}

void check_layer(const config::LayerSpec& spec, const Shape& input, std::size_t batch,
                 std::uint64_t seed) {
  SCOPED_TRACE(spec.type + " " + spec.activation + " input " + shape_string(input) + " kernel " +
               std::to_string(spec.kernel) + " stride " + std::to_string(spec.stride) +
               " padding " + std::to_string(spec.padding) + " pool " + std::to_string(spec.pool));
  core::Rng rng(seed);
  auto layer = make_layer(spec, input, 0);
  const std::size_t in = batch * layer->input_size(), out = batch * layer->output_size();
  std::vector<float> params = random_vector(layer->parameter_count(), rng, 0.5f);
  std::vector<float> grads(params.size(), -7.0f);  // poisoned: backward must overwrite
  std::vector<float> x = random_vector(in, rng, 1.0f);
  std::vector<float> r = random_vector(out, rng, 1.0f);

  Pass pass;
  pass.compute = &cpu_compute();
  pass.params = params.data();
  pass.grads = grads.data();
  pass.batch = batch;
  pass.training = true;
  pass.rng = &rng;
  std::vector<float> y(out, 0.0f);
  const bool through = layer->passes_through(true);
  if (through) {
    y = x;
  } else {
    layer->forward(pass, x.data(), y.data());
  }

  Vec mask;
  if (spec.type == "dropout")
    for (std::size_t i = 0; i < in; ++i) mask.push_back(y[i] / x[i]);
  const Vec xd = testing::to_double(x), pd = testing::to_double(params);
  expect_close(y, testing::ref_layer_forward(spec, input, batch, xd, pd, mask), "forward");

  std::vector<float> dy = r, dx(in, -7.0f);
  if (through) {
    dx = dy;
  } else {
    layer->backward(pass, x.data(), y.data(), dy.data(), dx.data());
  }
  const Vec rd = testing::to_double(r);
  auto objective = [&](const Vec& xs, const Vec& ps) {
    const Vec ys = testing::ref_layer_forward(spec, input, batch, xs, ps, mask);
    double f = 0.0;
    for (std::size_t i = 0; i < ys.size(); ++i) f += rd[i] * ys[i];
    return f;
  };
  expect_close(dx, testing::numeric_gradient([&](const Vec& xs) { return objective(xs, pd); }, xd),
               "input gradient");
  if (!params.empty()) {
    expect_close(grads,
                 testing::numeric_gradient([&](const Vec& ps) { return objective(xd, ps); }, pd),
                 "parameter gradient");
  }
}

const char* const kActivations[] = {"none", "relu", "leaky_relu", "elu", "tanh", "sigmoid"};

TEST(LayerGradient, DenseEveryActivation) {
  std::uint64_t seed = 1;
  for (const char* activation : kActivations) {
    config::LayerSpec spec;
    spec.type = "dense";
    spec.units = 5;
    spec.activation = activation;
    spec.alpha = 0.2;
    check_layer(spec, {7}, 3, seed++);
    check_layer(spec, {2, 2, 3}, 2, seed++);  // an image input is flattened
  }
}

TEST(LayerGradient, Conv2DRandomGeometries) {
  core::Rng pick(2024);
  for (int trial = 0; trial < 24; ++trial) {
    config::LayerSpec spec;
    spec.type = "conv2d";
    spec.filters = 1 + static_cast<std::int64_t>(pick.below(3));
    spec.kernel = 1 + static_cast<std::int64_t>(pick.below(4));
    spec.stride = 1 + static_cast<std::int64_t>(pick.below(3));
    spec.padding = static_cast<std::int64_t>(pick.below(3));
    spec.activation = kActivations[trial % 6];
    spec.alpha = 0.3;
    const std::int64_t channels = 1 + static_cast<std::int64_t>(pick.below(3));
    const std::int64_t height = std::max<std::int64_t>(spec.kernel, 2 + pick.below(6));
    const std::int64_t width = std::max<std::int64_t>(spec.kernel, 2 + pick.below(6));
    check_layer(spec, {channels, height, width}, 1 + pick.below(3), 100 + trial);
  }
}

TEST(LayerGradient, Conv2DOneByOneUsesNoIm2col) {
  config::LayerSpec spec;
  spec.type = "conv2d";
  spec.filters = 4;
  spec.kernel = 1;
  spec.activation = "relu";
  check_layer(spec, {3, 4, 5}, 2, 7);
}

TEST(LayerGradient, MaxPoolRandomGeometries) {
  core::Rng pick(99);
  for (int trial = 0; trial < 16; ++trial) {
    config::LayerSpec spec;
    spec.type = "maxpool2d";
    spec.activation = "none";
    spec.pool = 1 + static_cast<std::int64_t>(pick.below(3));
    spec.stride = static_cast<std::int64_t>(pick.below(4));  // 0: same as pool
    const std::int64_t height = spec.pool + static_cast<std::int64_t>(pick.below(5));
    const std::int64_t width = spec.pool + static_cast<std::int64_t>(pick.below(5));
    check_layer(spec, {1 + static_cast<std::int64_t>(pick.below(3)), height, width},
                1 + pick.below(3), 300 + trial);
  }
}

TEST(LayerGradient, FlattenAndDropout) {
  config::LayerSpec flatten;
  flatten.type = "flatten";
  check_layer(flatten, {2, 3, 4}, 2, 5);
  for (double rate : {0.0, 0.3, 0.7}) {
    config::LayerSpec dropout;
    dropout.type = "dropout";
    dropout.rate = rate;
    check_layer(dropout, {40}, 3, 6);
  }
}

}  // namespace
}  // namespace gradshare::nn
