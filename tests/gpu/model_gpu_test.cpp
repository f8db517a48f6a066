// model_gpu_test.cpp: whole models training on the GPU (nn::Model::compute_on a CudaCompute,
// what compute.device: cuda does for every worker) against the same models on the CPU, for
// several steps with the parameters changed on the host in between, as an optimizer does: the
// shipped CNN's architecture and an MLP with dropout. Loss to 1e-5 relative; gradients to
// ||gpu - cpu|| / ||cpu|| <= 1e-4 (cuBLAS and OpenBLAS add in different orders over 64 images);
// the evaluation's predicted classes equal but for at most one near-tie in 256.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "gpu_test_util.h"
#include "kernels/cuda/cuda_compute.h"
#include "nn/model.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers

config::LayerSpec layer(const char* type, const char* activation = "none") {
  config::LayerSpec spec;
  spec.type = type;
  spec.activation = activation;
  return spec;
}

config::LayerSpec conv(std::int64_t filters) {
  config::LayerSpec spec = layer("conv2d", "relu");
  spec.filters = filters;
  spec.kernel = 3;
  spec.padding = 1;
  return spec;
}

config::LayerSpec pool() {
  config::LayerSpec spec = layer("maxpool2d");
  spec.pool = 2;
  spec.stride = 2;
  return spec;
}

config::LayerSpec dense(std::int64_t units, const char* activation = "none") {
  config::LayerSpec spec = layer("dense", activation);
  spec.units = units;
  return spec;
}

config::ModelConfig shipped_cnn() {  // configs/fashion-mnist-cnn.yaml
  config::ModelConfig spec;
  spec.input_shape = {1, 28, 28};
  spec.num_classes = 10;
  spec.layers = {conv(32), pool(), conv(64), pool(), layer("flatten"), dense(128, "relu"),
                 dense(10)};
  return spec;
}

config::ModelConfig mlp_with_dropout() {
  config::ModelConfig spec;
  spec.input_shape = {784};
  spec.num_classes = 10;
  spec.l2 = 1e-4;
  spec.layers = {dense(256, "relu"), layer("dropout"), dense(128, "tanh"), dense(10)};
  return spec;
}

void check_training_matches(const config::ModelConfig& spec) {
  CudaCompute gpu;
  const nn::Model reference = nn::Model::build(spec, 42);
  nn::Model on_cpu = reference, on_gpu = reference;
  on_gpu.compute_on(gpu);
  ASSERT_FALSE(on_gpu.computes_on_host());
  core::Rng rng_cpu(9), rng_gpu(9);
  const std::size_t batch = 64, n = reference.parameter_count();
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<float> x = normal_vector(batch * reference.sample_size(), 1.0f, 10 + step);
    core::Rng label_rng(20 + step);
    std::vector<std::int32_t> labels(batch);
    for (auto& label : labels) label = static_cast<std::int32_t>(label_rng.below(10));
    for (float& g : on_gpu.gradients()) g = std::numeric_limits<float>::quiet_NaN();
    const auto want = on_cpu.train_batch(x.data(), labels.data(), batch, rng_cpu);
    const auto got = on_gpu.train_batch(x.data(), labels.data(), batch, rng_gpu);
    EXPECT_NEAR(got.loss, want.loss, 1e-5 * want.loss);
    const std::vector<float> cpu_grads(on_cpu.gradients().begin(), on_cpu.gradients().end());
    const std::vector<float> gpu_grads(on_gpu.gradients().begin(), on_gpu.gradients().end());
    EXPECT_LT(relative_error(cpu_grads, gpu_grads), 1e-4);
    for (nn::Model* model : {&on_cpu, &on_gpu}) {
      auto params = model->parameters();
      const auto grads = model->gradients();
      for (std::size_t i = 0; i < n; ++i) params[i] -= 0.05f * grads[i];
    }
  }
  const std::size_t test = 256;
  const std::vector<float> x = normal_vector(test * reference.sample_size(), 1.0f, 99);
  std::vector<std::int32_t> want(test, -1), got(test, -2);
  on_cpu.evaluate_batch(x.data(), nullptr, test, want.data());
  on_gpu.evaluate_batch(x.data(), nullptr, test, got.data());
  int differ = 0;
  for (std::size_t i = 0; i < test; ++i) differ += want[i] != got[i];
  EXPECT_LE(differ, 1);
}

TEST(ModelOnGpu, TheShippedCnnTrainsLikeOnTheCpu) { check_training_matches(shipped_cnn()); }

TEST(ModelOnGpu, AnMlpWithDropoutTrainsLikeOnTheCpu) { check_training_matches(mlp_with_dropout()); }

}  // namespace
}  // namespace gradshare::kernels::cuda
