// learning_test.cpp: small models learn small synthetic problems end to end (model, optimizer,
// schedule, apply_update): the loss falls and held-out accuracy is far above chance.
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"

namespace gradshare::nn {
namespace {

struct Dataset {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};

// Four Gaussian clusters in 10 dimensions.
Dataset clusters(std::size_t n, std::uint64_t seed) {
  core::Rng centres_rng(1234), rng(seed);
  std::vector<float> centres(4 * 10);
  for (float& c : centres) c = 2.0f * centres_rng.normal();
  Dataset d;
  for (std::size_t i = 0; i < n; ++i) {
    const auto label = static_cast<std::int32_t>(rng.below(4));
    for (std::size_t j = 0; j < 10; ++j) d.x.push_back(centres[label * 10 + j] + rng.normal());
    d.y.push_back(label);
  }
  return d;
}

// 8x8 images of one horizontal (class 0) or vertical (class 1) bar in noise.
Dataset bars(std::size_t n, std::uint64_t seed) {
  core::Rng rng(seed);
  Dataset d;
  for (std::size_t i = 0; i < n; ++i) {
    const auto label = static_cast<std::int32_t>(rng.below(2));
    const auto at = static_cast<std::size_t>(rng.below(8));
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < 8; ++c)
        d.x.push_back(((label == 0 ? r : c) == at ? 1.0f : 0.0f) + 0.3f * rng.normal());
    d.y.push_back(label);
  }
  return d;
}

struct Outcome {
  double first_loss = 0.0, last_loss = 0.0, test_accuracy = 0.0;
};

Outcome train(Model& model, const config::OptimizerConfig& opt, const Dataset& train_set,
              const Dataset& test_set, std::size_t batch, std::int64_t steps) {
  auto optimizer = Optimizer::create(opt, model.parameter_count());
  const LearningRateSchedule schedule(opt, steps, 10);
  std::vector<float> update(model.parameter_count());
  core::Rng rng(5);
  const std::size_t n = train_set.y.size(), width = model.sample_size();
  Outcome out;
  double window = 0.0;
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::size_t start = (static_cast<std::size_t>(step) * batch) % (n - batch);
    const BatchResult r = model.train_batch(train_set.x.data() + start * width,
                                            train_set.y.data() + start, batch, rng);
    if (step == 0) out.first_loss = r.loss;
    if (step >= steps - 10) window += r.loss / 10.0;
    optimizer->compute_update(model.gradients(), model.parameters(), update, schedule.at(step));
    apply_update(model.parameters(), update);
  }
  out.last_loss = window;
  const BatchResult test =
      model.evaluate_batch(test_set.x.data(), test_set.y.data(), test_set.y.size(), nullptr);
  out.test_accuracy = static_cast<double>(test.correct) / static_cast<double>(test_set.y.size());
  return out;
}

config::LayerSpec spec(const char* type, std::int64_t size, const char* activation) {
  config::LayerSpec l;
  l.type = type;
  l.units = l.filters = size;
  l.activation = activation;
  return l;
}

TEST(Learning, MlpSeparatesClusters) {
  config::ModelConfig m;
  m.input_shape = {10};
  m.num_classes = 4;
  m.layers = {spec("dense", 16, "relu"), spec("dropout", 0, "none"), spec("dense", 4, "none")};
  m.layers[1].rate = 0.2;
  Model model = Model::build(m, 42);
  config::OptimizerConfig opt;
  opt.type = "adam";
  opt.learning_rate = 0.01;
  opt.schedule = "cosine";
  opt.warmup_steps = 10;
  const Outcome o = train(model, opt, clusters(512, 1), clusters(400, 2), 32, 300);
  EXPECT_LT(o.last_loss, 0.3 * o.first_loss);
  EXPECT_GT(o.test_accuracy, 0.9);  // chance: 0.25
}

TEST(Learning, CnnTellsBarsApart) {
  config::ModelConfig m;
  m.input_shape = {1, 8, 8};
  m.num_classes = 2;
  m.layers = {spec("conv2d", 4, "relu"), spec("maxpool2d", 0, "none"), spec("flatten", 0, "none"),
              spec("dense", 2, "none")};
  m.layers[0].padding = 1;
  m.layers[1].stride = 2;
  Model model = Model::build(m, 7);
  config::OptimizerConfig opt;
  opt.type = "nesterov";
  opt.learning_rate = 0.05;
  opt.momentum = 0.9;
  const Outcome o = train(model, opt, bars(512, 3), bars(400, 4), 16, 200);
  EXPECT_LT(o.last_loss, 0.3 * o.first_loss);
  EXPECT_GT(o.test_accuracy, 0.9);  // chance: 0.5
}

}  // namespace
}  // namespace gradshare::nn
