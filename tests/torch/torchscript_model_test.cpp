// TorchScript modules as nn::Model (model.torchscript): the module's parameters are views of
// the flat vectors (the built-in MLP with the same weights gives the same loss and gradient),
// gradients overwrite, copies and swapped parameters are followed, buffers round-trip and
// refresh, model.pt saves what the model holds, and every bad module is one UserError naming
// model.torchscript. The modules come from write_test_modules.py (GS_TORCH_MODULES).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/errors.h"
#include "nn/model.h"
#include "../unit/nn/model_specs.h"

namespace gradshare::nn {
namespace {

using testing::dense;
using testing::random_batch;

std::string module_path(const std::string& name) {
  const char* dir = std::getenv("GS_TORCH_MODULES");
  return std::string(dir ? dir : ".") + "/" + name + ".pt";
}

config::ModelConfig module_spec(const std::string& name, std::vector<std::int64_t> shape) {
  config::ModelConfig spec;
  spec.torchscript = module_path(name);
  spec.input_shape = std::move(shape);
  spec.num_classes = 10;
  return spec;
}

Model mlp_module() { return Model::build(module_spec("mlp", {784}), 1); }

// The built-in 784-256-128-10 MLP holding the module's weights (dense kernels are [in, out],
// torch's Linear weights [out, in]).
Model builtin_twin(const Model& module) {
  config::ModelConfig spec;
  spec.input_shape = {784};
  spec.num_classes = 10;
  spec.layers = {dense(256, "relu"), dense(128, "relu"), dense(10)};
  Model builtin = Model::build(spec, 1);
  const auto& from = module.parameter_views();
  const auto& to = builtin.parameter_views();
  EXPECT_EQ(from.size(), to.size());
  for (std::size_t v = 0; v < from.size(); ++v) {
    const float* source = module.parameters().data() + from[v].offset;
    float* target = builtin.parameters().data() + to[v].offset;
    if (from[v].shape.size() == 2) {
      const auto out = static_cast<std::size_t>(from[v].shape[0]);
      const auto in = static_cast<std::size_t>(from[v].shape[1]);
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t i = 0; i < in; ++i) target[i * out + o] = source[o * in + i];
    } else {
      std::copy(source, source + from[v].size, target);
    }
  }
  return builtin;
}

TEST(TorchScriptModel, ParametersInModuleOrderWithNames) {
  const Model model = mlp_module();
  EXPECT_TRUE(model.is_module());
  EXPECT_EQ(model.parameter_count(), 235146u);
  const auto& views = model.parameter_views();
  ASSERT_EQ(views.size(), 6u);
  EXPECT_EQ(views[0].layer, "hidden1");
  EXPECT_EQ(views[0].role, "weight");
  EXPECT_EQ(views[0].shape, (std::vector<std::int64_t>{256, 784}));
  EXPECT_EQ(views[5].layer, "out");
  EXPECT_EQ(views[5].role, "bias");
  EXPECT_EQ(views[5].offset + views[5].size, model.parameter_count());
  EXPECT_TRUE(model.buffers().empty());
}

TEST(TorchScriptModel, LossAndGradientMatchTheBuiltInMlp) {
  Model module = mlp_module();
  Model builtin = builtin_twin(module);
  const auto batch = random_batch(module, 32, 7);
  core::Rng rng_a(1), rng_b(1);
  const auto a = module.train_batch(batch.x.data(), batch.labels.data(), 32, rng_a);
  const auto b = builtin.train_batch(batch.x.data(), batch.labels.data(), 32, rng_b);
  EXPECT_NEAR(a.loss, b.loss, 1e-5);
  EXPECT_EQ(a.correct, b.correct);
  const auto& from = module.parameter_views();
  const auto& to = builtin.parameter_views();
  double worst = 0.0;
  for (std::size_t v = 0; v < from.size(); ++v) {
    const float* ga = module.gradients().data() + from[v].offset;
    const float* gb = builtin.gradients().data() + to[v].offset;
    const std::size_t out = from[v].shape[0];
    const std::size_t in = from[v].shape.size() == 2 ? from[v].shape[1] : 1;
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i) {
        const float mine = ga[o * in + i];
        const float theirs = from[v].shape.size() == 2 ? gb[i * out + o] : gb[o];
        worst = std::max(worst, static_cast<double>(std::fabs(mine - theirs)));
      }
  }
  EXPECT_LT(worst, 1e-5);
}

TEST(TorchScriptModel, GradientsAreOverwrittenNotAccumulated) {
  Model model = mlp_module();
  const auto batch = random_batch(model, 16, 3);
  core::Rng rng(1);
  model.train_batch(batch.x.data(), batch.labels.data(), 16, rng);
  const std::vector<float> first(model.gradients().begin(), model.gradients().end());
  model.train_batch(batch.x.data(), batch.labels.data(), 16, rng);
  for (std::size_t i = 0; i < first.size(); i += 97) ASSERT_EQ(model.gradients()[i], first[i]);
}

TEST(TorchScriptModel, FollowsParameterWritesSwapsAndCopies) {
  Model model = mlp_module();
  const auto batch = random_batch(model, 16, 4);
  const auto before = model.evaluate_batch(batch.x.data(), batch.labels.data(), 16, nullptr);

  // A write into the flat vector is what the module computes with.
  Model copy = model;
  for (float& p : copy.parameters()) p *= 0.5f;
  const auto halved = copy.evaluate_batch(batch.x.data(), batch.labels.data(), 16, nullptr);
  EXPECT_NE(halved.loss, before.loss);
  // ... and the original, whose vectors the copy does not share, is unchanged.
  EXPECT_EQ(model.evaluate_batch(batch.x.data(), batch.labels.data(), 16, nullptr).loss,
            before.loss);

  // swap_parameters: the module follows the vector swapped in, and back.
  std::vector<float> other(copy.parameters().begin(), copy.parameters().end());
  model.swap_parameters(other);
  EXPECT_EQ(model.evaluate_batch(batch.x.data(), batch.labels.data(), 16, nullptr).loss,
            halved.loss);
  model.swap_parameters(other);
  EXPECT_EQ(model.evaluate_batch(batch.x.data(), batch.labels.data(), 16, nullptr).loss,
            before.loss);
}

TEST(TorchScriptModel, ResNetBuffersRoundTripAndRefresh) {
  Model model = Model::build(module_spec("resnet", {1, 28, 28}), 1);
  EXPECT_GE(model.parameter_count(), 300000u);
  ASSERT_FALSE(model.buffer_views().empty());
  EXPECT_EQ(model.buffer_views()[0].name, "stem_bn.running_mean");
  const std::vector<float> fresh = model.buffers();

  const auto batch = random_batch(model, 8, 5);
  model.refresh_statistics(batch.x.data(), 8, 1);
  const std::vector<float> refreshed = model.buffers();
  EXPECT_NE(refreshed, fresh);
  // The statistics of that batch, whatever the replica held before: another start gives them
  // again, and num_batches_tracked is left alone.
  std::vector<float> other = fresh;
  for (float& v : other) v += 3.0f;
  model.set_buffers(other);
  model.refresh_statistics(batch.x.data(), 8, 1);
  const std::vector<float> again = model.buffers();
  const auto& views = model.buffer_views();
  for (const ModuleTensor& view : views) {
    for (std::size_t i = view.offset; i < view.offset + view.size; ++i) {
      if (view.name.ends_with("num_batches_tracked"))
        ASSERT_EQ(again[i], other[i]) << view.name;
      else
        ASSERT_NEAR(again[i], refreshed[i], 1e-4 * (1.0 + std::fabs(refreshed[i]))) << view.name;
    }
  }
  model.set_buffers(refreshed);
  // Eval mode uses the running statistics and changes nothing.
  std::vector<std::int32_t> first(8), second(8);
  const auto a = model.evaluate_batch(batch.x.data(), batch.labels.data(), 8, first.data());
  EXPECT_EQ(model.buffers(), refreshed);

  model.set_buffers(fresh);
  EXPECT_EQ(model.buffers(), fresh);
  model.set_buffers(refreshed);
  const auto b = model.evaluate_batch(batch.x.data(), batch.labels.data(), 8, second.data());
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(first, second);

  // A copy carries the buffers.
  const Model copy = model;
  EXPECT_EQ(copy.buffers(), refreshed);
}

// Averaged over batches: the mean of the per-batch statistics, as one refresh per batch gives.
TEST(TorchScriptModel, RefreshAveragesTheBatches) {
  Model model = Model::build(module_spec("resnet", {1, 28, 28}), 1);
  const auto a = random_batch(model, 8, 21), b = random_batch(model, 8, 22);
  model.refresh_statistics(a.x.data(), 8, 1);
  const std::vector<float> from_a = model.buffers();
  model.refresh_statistics(b.x.data(), 8, 1);
  const std::vector<float> from_b = model.buffers();
  std::vector<float> both(a.x);
  both.insert(both.end(), b.x.begin(), b.x.end());
  model.refresh_statistics(both.data(), 8, 2);
  const std::vector<float> averaged = model.buffers();
  for (const ModuleTensor& view : model.buffer_views()) {
    if (view.name.ends_with("num_batches_tracked")) continue;
    for (std::size_t i = view.offset; i < view.offset + view.size; ++i) {
      const float expected = 0.5f * (from_a[i] + from_b[i]);
      ASSERT_NEAR(averaged[i], expected, 1e-4 * (1.0 + std::fabs(expected))) << view.name;
    }
  }
}

TEST(TorchScriptModel, SavedModuleHoldsTheTrainedValues) {
  Model model = mlp_module();
  for (float& p : model.parameters()) p *= 0.25f;
  const auto path = std::filesystem::temp_directory_path() / "gradshare_torch_saved_test.pt";
  model.save_module(path.string(), "gradshare.json", "{}");
  config::ModelConfig spec = module_spec("mlp", {784});
  spec.torchscript = path.string();
  Model loaded = Model::build(spec, 1);
  std::filesystem::remove(path);
  ASSERT_EQ(loaded.parameter_count(), model.parameter_count());
  for (std::size_t i = 0; i < model.parameter_count(); i += 101)
    ASSERT_EQ(loaded.parameters()[i], model.parameters()[i]);
}

void expect_refused(const config::ModelConfig& spec, const std::string& cause) {
  try {
    Model::build(spec, 1);
    FAIL() << "built a model from " << spec.torchscript;
  } catch (const core::UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("model.torchscript: " + spec.torchscript), std::string::npos)
        << message;
    EXPECT_NE(message.find(cause), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(TorchScriptModel, BadModulesAreOneClearError) {
  expect_refused(module_spec("missing", {784}), "no such file");
  expect_refused(module_spec("garbage", {784}), "not a TorchScript archive");
  expect_refused(module_spec("frozen", {784}), "no trainable float32 parameters");
  expect_refused(module_spec("tuple", {784}), "not a tensor of logits");
  expect_refused(module_spec("mlp", {100}), "forward() failed on a batch of 2 zero samples");
  config::ModelConfig classes = module_spec("mlp", {784});
  classes.num_classes = 5;
  expect_refused(classes, "expected float logits [2, 5]");
}

TEST(TorchScriptModel, LayersAndModuleTogetherAreRefused) {
  config::ModelConfig spec = module_spec("mlp", {784});
  spec.layers = {dense(10)};
  EXPECT_THROW(Model::build(spec, 1), core::UserError);
}

}  // namespace
}  // namespace gradshare::nn
