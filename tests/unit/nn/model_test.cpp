// model_test.cpp: whole models: gradients against finite differences of a double-precision
// reference (including L2), the flat-buffer layout, shape errors naming the layer, copies,
// seeding, dropout at training and inference.
#include "nn/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/rng.h"
#include "model_specs.h"
#include "reference.h"

namespace gradshare::nn {
namespace {

using ::testing::HasSubstr;
using testing::Vec;

using testing::Batch;
using testing::conv;
using testing::dense;
using testing::layer;
using testing::maxpool;
using testing::random_batch;

void check_model_gradient(const config::ModelConfig& spec, std::size_t batch) {
  Model model = Model::build(spec, 17);
  // Larger random weights than the initialisers give, so every path carries signal.
  core::Rng rng(23);
  for (float& p : model.parameters()) p = 0.4f * rng.normal();
  const Batch data = random_batch(model, batch, 5);
  for (float& g : model.gradients()) g = -7.0f;  // poisoned: train_batch must overwrite
  const BatchResult result = model.train_batch(data.x.data(), data.labels.data(), batch, rng);

  const Vec params =
      testing::to_double(std::vector<float>(model.parameters().begin(), model.parameters().end()));
  const Vec x = testing::to_double(data.x);
  const double reference = testing::ref_model_loss(spec, params, x, data.labels, batch);
  double l2_term = 0.0;
  for (const ParameterView& view : model.parameter_views())
    if (view.role == "kernel")
      for (std::size_t i = 0; i < view.size; ++i)
        l2_term += 0.5 * spec.l2 * params[view.offset + i] * params[view.offset + i];
  EXPECT_NEAR(result.loss, reference - l2_term, 1e-4 * (1.0 + reference));  // loss has no L2

  const Vec numeric = testing::numeric_gradient(
      [&](const Vec& p) { return testing::ref_model_loss(spec, p, x, data.labels, batch); },
      params);
  for (const ParameterView& view : model.parameter_views()) {
    for (std::size_t i = 0; i < view.size; ++i) {
      const std::size_t at = view.offset + i;
      EXPECT_NEAR(model.gradients()[at], numeric[at], 1e-3 * (1.0 + std::fabs(numeric[at])))
          << view.layer << " " << view.role << " element " << i;
    }
  }
}

TEST(ModelGradient, MlpWithL2) {
  config::ModelConfig spec;
  spec.input_shape = {6};
  spec.num_classes = 3;
  spec.l2 = 0.05;
  spec.layers = {dense(5, "tanh"), dense(4, "elu"), dense(4, "leaky_relu"), dense(3)};
  check_model_gradient(spec, 4);
}

TEST(ModelGradient, CnnWithStridePaddingAndPooling) {
  config::ModelConfig spec;
  spec.input_shape = {2, 7, 6};
  spec.num_classes = 4;
  spec.l2 = 0.01;
  spec.layers = {conv(3, 3, 1, 1, "relu"),
                 conv(2, 2, 2, 1, "sigmoid"),
                 maxpool(2, 1),
                 layer("flatten"),
                 dense(5, "relu"),
                 dense(4)};
  check_model_gradient(spec, 3);
}

TEST(ModelGradient, PoolingBeforeTheFirstWeightsAndDenseOnImages) {
  config::ModelConfig spec;
  spec.input_shape = {1, 6, 6};
  spec.num_classes = 2;
  spec.layers = {maxpool(2, 0), conv(2, 3, 1, 0, "tanh"), dense(2)};
  check_model_gradient(spec, 2);
}

config::ModelConfig mlp_spec() {
  config::ModelConfig spec;
  spec.input_shape = {1, 28, 28};
  spec.num_classes = 10;
  spec.layers = {dense(256, "relu"), dense(128, "relu"), dense(10)};
  return spec;
}

TEST(Model, ParameterViewsTileTheBufferInLayerOrder) {
  config::ModelConfig spec;
  spec.input_shape = {3, 8, 8};
  spec.num_classes = 10;
  spec.layers = {conv(4, 3, 1, 1, "relu"), maxpool(2, 2), layer("dropout"), layer("flatten"),
                 dense(10)};
  const Model model = Model::build(spec, 1);
  const auto& views = model.parameter_views();
  ASSERT_EQ(views.size(), 4u);
  EXPECT_EQ(views[0].layer, "conv2d_0");
  EXPECT_EQ(views[0].role, "kernel");
  EXPECT_EQ(views[0].shape, (std::vector<std::int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(views[1].layer, "conv2d_0");
  EXPECT_EQ(views[1].role, "bias");
  EXPECT_EQ(views[2].layer, "dense_4");
  EXPECT_EQ(views[2].shape, (std::vector<std::int64_t>{64, 10}));
  EXPECT_EQ(views[3].shape, (std::vector<std::int64_t>{10}));
  std::size_t next = 0;
  for (const ParameterView& view : views) {
    EXPECT_EQ(view.offset, next);
    std::size_t size = 1;
    for (auto d : view.shape) size *= static_cast<std::size_t>(d);
    EXPECT_EQ(view.size, size);
    next += view.size;
  }
  EXPECT_EQ(next, model.parameter_count());
  EXPECT_EQ(model.parameters().size(), model.parameter_count());
  EXPECT_EQ(model.gradients().size(), model.parameter_count());
}

TEST(Model, MlpHasTheExpectedSizeAndSummary) {
  const Model model = Model::build(mlp_spec(), 1);
  EXPECT_EQ(model.parameter_count(), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(model.sample_size(), 784u);
  const std::string summary = model.summary();
  EXPECT_THAT(summary, HasSubstr("dense_0"));
  EXPECT_THAT(summary, HasSubstr("relu"));
  EXPECT_THAT(summary, HasSubstr("200,960"));
  EXPECT_THAT(summary, HasSubstr("235,146"));
  EXPECT_EQ(std::count(summary.begin(), summary.end(), '\n'), 4);
}

TEST(Model, InitialisationFollowsTheSeedAndTheScheme) {
  const Model a = Model::build(mlp_spec(), 7), b = Model::build(mlp_spec(), 7);
  const Model c = Model::build(mlp_spec(), 8);
  EXPECT_TRUE(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  EXPECT_FALSE(std::equal(a.parameters().begin(), a.parameters().end(), c.parameters().begin()));
  // He for the ReLU layer 0 (std sqrt(2/784)), Xavier for the linear output layer
  // (std sqrt(2/(128+10))); biases zero.
  auto stddev = [&](const ParameterView& v) {
    double s = 0.0;
    for (std::size_t i = 0; i < v.size; ++i) s += std::pow(a.parameters()[v.offset + i], 2);
    return std::sqrt(s / static_cast<double>(v.size));
  };
  const auto& views = a.parameter_views();
  EXPECT_NEAR(stddev(views[0]), std::sqrt(2.0 / 784), 0.02 * std::sqrt(2.0 / 784));
  EXPECT_NEAR(stddev(views[4]), std::sqrt(2.0 / 138), 0.05 * std::sqrt(2.0 / 138));
  EXPECT_EQ(stddev(views[1]), 0.0);

  config::ModelConfig xavier = mlp_spec();
  xavier.init = "xavier";
  const Model x = Model::build(xavier, 7);
  double s = 0.0;
  for (std::size_t i = 0; i < views[0].size; ++i) s += std::pow(x.parameters()[i], 2);
  EXPECT_NEAR(std::sqrt(s / views[0].size), std::sqrt(2.0 / (784 + 256)), 0.001);
}

std::string build_error(const config::ModelConfig& spec) {
  try {
    Model::build(spec, 1);
  } catch (const core::UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Model, ShapeMistakesNameTheLayer) {
  config::ModelConfig spec;
  spec.input_shape = {1, 8, 8};
  spec.num_classes = 10;
  spec.layers = {conv(4, 3, 1, 0, "relu"), maxpool(2, 0), conv(4, 5, 1, 0, "relu"), dense(10)};
  spec.layers[2].line = 14;
  EXPECT_EQ(build_error(spec), "model.layers[2] (conv2d, line 14): kernel 5 larger than input 3x3");

  spec.layers[2] = conv(4, 6, 1, 1, "relu");
  EXPECT_THAT(build_error(spec), HasSubstr("kernel 6 larger than padded input 5x5"));

  spec.layers = {layer("flatten"), conv(4, 3, 1, 0, "relu"), dense(10)};
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[1] (conv2d): needs a [channels, "
                                           "height, width] input, got [64]"));

  spec.layers = {maxpool(9, 0), dense(10)};
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[0] (maxpool2d): pool 9 larger than "
                                           "input 8x8"));

  spec.layers = {dense(32, "relu"), dense(7)};
  spec.layers[1].line = 20;
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[1] (dense, line 20): the last layer "
                                           "outputs 7 values but model.num_classes is 10"));

  spec.layers = {dense(32, "swish"), dense(10)};
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[0] (dense): unknown activation "
                                           "'swish'"));

  spec.layers = {maxpool(2, 0), dense(10)};
  spec.layers[0].activation = "relu";
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[0] (maxpool2d): a maxpool2d layer "
                                           "takes no activation"));

  spec.layers = {layer("dropout"), dense(10)};
  spec.layers[0].rate = 1.0;
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[0] (dropout): rate must be in [0, 1)"));

  spec.layers = {layer("lstm"), dense(10)};
  EXPECT_THAT(build_error(spec), HasSubstr("unknown layer type 'lstm'"));

  spec.layers = {};
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers: empty"));

  spec.layers = {dense(10)};
  spec.input_shape = {28, 28};
  EXPECT_THAT(build_error(spec), HasSubstr("model.input_shape: expected [features] or "
                                           "[channels, height, width], got [28x28]"));
  spec.input_shape = {100000, 100000, 100000};
  EXPECT_THAT(build_error(spec), HasSubstr("model.input_shape"));

  spec.input_shape = {1000000};
  spec.layers = {dense(1000000), dense(10)};
  EXPECT_THAT(build_error(spec), HasSubstr("model.layers[0] (dense): kernel size"));
}

TEST(Model, LabelsOutOfRangeAreUserErrors) {
  Model model = Model::build(mlp_spec(), 1);
  Batch data = random_batch(model, 4, 1);
  data.labels[2] = 10;
  core::Rng rng(1);
  EXPECT_THROW(model.train_batch(data.x.data(), data.labels.data(), 4, rng), core::UserError);
  data.labels[2] = -1;
  EXPECT_THROW(model.evaluate_batch(data.x.data(), data.labels.data(), 4, nullptr),
               core::UserError);
}

TEST(Model, CopiesAreIndependentReplicas) {
  Model original = Model::build(mlp_spec(), 3);
  const Batch data = random_batch(original, 8, 2);
  core::Rng rng_a(9), rng_b(9);
  Model replica = original;
  const BatchResult a = original.train_batch(data.x.data(), data.labels.data(), 8, rng_a);
  const BatchResult b = replica.train_batch(data.x.data(), data.labels.data(), 8, rng_b);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_TRUE(std::equal(original.gradients().begin(), original.gradients().end(),
                         replica.gradients().begin()));
  replica.parameters()[0] += 1.0f;
  EXPECT_NE(replica.parameters()[0], original.parameters()[0]);
  Model assigned = Model::build(mlp_spec(), 4);
  assigned = replica;
  EXPECT_EQ(assigned.parameters()[0], replica.parameters()[0]);
}

TEST(Model, EvaluateMatchesTrainingLossWithoutDropout) {
  Model model = Model::build(mlp_spec(), 3);
  const Batch data = random_batch(model, 16, 4);
  std::vector<std::int32_t> predicted(16, -1);
  const BatchResult eval =
      model.evaluate_batch(data.x.data(), data.labels.data(), 16, predicted.data());
  core::Rng rng(1);
  const BatchResult train = model.train_batch(data.x.data(), data.labels.data(), 16, rng);
  EXPECT_NEAR(eval.loss, train.loss, 1e-6);
  EXPECT_EQ(eval.correct, train.correct);
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_GE(predicted[i], 0);
    EXPECT_LT(predicted[i], 10);
    correct += predicted[i] == data.labels[i];
  }
  EXPECT_EQ(correct, eval.correct);
  const BatchResult no_labels = model.evaluate_batch(data.x.data(), nullptr, 16, nullptr);
  EXPECT_EQ(no_labels.correct, 0);
}

TEST(Model, DropoutIsRandomInTrainingAndOffInInference) {
  config::ModelConfig spec = mlp_spec();
  spec.layers.insert(spec.layers.begin() + 1, layer("dropout"));
  spec.layers[1].rate = 0.5;
  Model model = Model::build(spec, 3);
  const Batch data = random_batch(model, 8, 4);
  core::Rng rng1(1), rng2(1), rng3(2);
  const double l1 = model.train_batch(data.x.data(), data.labels.data(), 8, rng1).loss;
  const double l2 = model.train_batch(data.x.data(), data.labels.data(), 8, rng2).loss;
  const double l3 = model.train_batch(data.x.data(), data.labels.data(), 8, rng3).loss;
  EXPECT_EQ(l1, l2);  // same draws, same masks
  EXPECT_NE(l1, l3);
  const double e1 = model.evaluate_batch(data.x.data(), data.labels.data(), 8, nullptr).loss;
  const double e2 = model.evaluate_batch(data.x.data(), data.labels.data(), 8, nullptr).loss;
  EXPECT_EQ(e1, e2);
}

TEST(Model, BatchSizeMayChangeBetweenCalls) {
  Model model = Model::build(mlp_spec(), 3);
  core::Rng rng(1);
  const Batch big = random_batch(model, 32, 1), small = random_batch(model, 3, 2);
  model.train_batch(big.x.data(), big.labels.data(), 32, rng);
  const double small_loss = model.train_batch(small.x.data(), small.labels.data(), 3, rng).loss;
  Model fresh = Model::build(mlp_spec(), 3);
  EXPECT_EQ(small_loss, fresh.train_batch(small.x.data(), small.labels.data(), 3, rng).loss);
}

}  // namespace
}  // namespace gradshare::nn
