// model_staging_test.cpp: a Model on a backend that computes off host memory (the GPU's path:
// parameters and batch uploaded on every call, gradients and predictions downloaded, and the
// convolution batched), run here on a stand-in that computes with the CPU kernels in memory of
// its own. Against the same model on the CPU: the first loss bit for bit (the batched forward
// makes the same products), gradients to 1e-6 relative (the batched backward sums the kernel
// gradient over the images in another order), predictions equal; results follow parameters
// changed between calls, and nothing the caller reads is left from before the call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "core/rng.h"
#include "model_specs.h"
#include "nn/model.h"

namespace gradshare::nn {
namespace {

// The CPU kernels on memory that only upload() fills and only download() reads.
class OffHostCompute final : public Compute {
 public:
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    cpu().gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                       std::size_t inner, Activation activation, float alpha) override {
    cpu().bias_activation(y, bias, outer, channels, inner, activation, alpha);
  }
  void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                           float alpha) override {
    cpu().activation_backward(y, dy, n, activation, alpha);
  }
  void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                     std::size_t inner) override {
    cpu().bias_gradient(dy, db, outer, channels, inner);
  }
  void im2col(const float* images, const ConvGeometry& g, std::size_t count,
              float* cols) override {
    cpu().im2col(images, g, count, cols);
  }
  void col2im(const float* cols, const ConvGeometry& g, std::size_t count,
              float* images) override {
    cpu().col2im(cols, g, count, images);
  }
  void gemm_batch(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                  std::size_t stride_a, const float* b, int ldb, std::size_t stride_b, float beta,
                  float* c, int ldc, std::size_t stride_c, std::size_t count) override {
    cpu().gemm_batch(ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                     stride_c, count);
  }
  void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                       std::int32_t* argmax) override {
    cpu().maxpool_forward(x, g, planes, y, argmax);
  }
  void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                        std::size_t planes, float* dx) override {
    cpu().maxpool_backward(dy, argmax, g, planes, dx);
  }
  void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                       std::uint64_t seed) override {
    cpu().dropout_forward(x, y, mask, n, rate, seed);
  }
  void multiply(const float* a, const float* b, float* out, std::size_t n) override {
    cpu().multiply(a, b, out, n);
  }
  void axpy(float alpha, const float* x, float* y, std::size_t n) override {
    cpu().axpy(alpha, x, y, n);
  }
  LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                                 std::size_t classes, float grad_scale, float* dlogits,
                                 std::int32_t* predicted) override {
    return cpu().softmax_cross_entropy(logits, labels, batch, classes, grad_scale, dlogits,
                                       predicted);
  }
  void* allocate(std::size_t bytes) override {
    ++allocations;
    return cpu().allocate(bytes);
  }
  void release(void* memory) noexcept override { cpu().release(memory); }
  bool computes_in_host_memory() const override { return false; }
  void upload(void* to, const void* from, std::size_t bytes) override {
    uploaded += bytes;
    std::memcpy(to, from, bytes);
  }
  void download(void* to, const void* from, std::size_t bytes) override {
    downloaded += bytes;
    std::memcpy(to, from, bytes);
  }

  std::size_t allocations = 0, uploaded = 0, downloaded = 0;

 private:
  static Compute& cpu() { return cpu_compute(); }
};

using testing::conv;
using testing::dense;
using testing::layer;
using testing::maxpool;
using testing::random_batch;
using testing::Batch;

config::ModelConfig small_cnn() {
  config::ModelConfig spec;
  spec.input_shape = {1, 8, 8};
  spec.num_classes = 5;
  spec.l2 = 0.01;
  spec.layers = {conv(4, 3, 1, 1, "relu"), maxpool(2, 2), layer("flatten"), dense(12, "tanh"),
                 layer("dropout"), dense(5)};
  return spec;
}

TEST(ModelOffHost, TrainsAndEvaluatesLikeTheCpuBitForBit) {
  OffHostCompute backend;  // before the models: it must outlive the buffers they hold in it
  const Model reference = Model::build(small_cnn(), 11);
  Model on_cpu = reference, off_host = reference;
  off_host.compute_on(backend);
  ASSERT_FALSE(off_host.computes_on_host());
  core::Rng rng_cpu(5), rng_off(5);
  double first_loss_cpu = 0.0, first_loss_off = 0.0;
  for (int step = 0; step < 3; ++step) {
    const Batch batch = random_batch(reference, 6, 100 + step);
    // What the caller reads must come from the download, not from before the call.
    for (float& g : off_host.gradients()) g = std::numeric_limits<float>::quiet_NaN();
    const BatchResult want = on_cpu.train_batch(batch.x.data(), batch.labels.data(), 6, rng_cpu);
    const BatchResult got = off_host.train_batch(batch.x.data(), batch.labels.data(), 6, rng_off);
    if (step == 0) first_loss_cpu = want.loss, first_loss_off = got.loss;
    EXPECT_NEAR(got.loss, want.loss, 1e-6 * want.loss) << "step " << step;
    EXPECT_EQ(got.correct, want.correct) << "step " << step;
    double difference = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < on_cpu.parameter_count(); ++i) {
      const double d = double(off_host.gradients()[i]) - on_cpu.gradients()[i];
      difference += d * d;
      norm += double(on_cpu.gradients()[i]) * on_cpu.gradients()[i];
    }
    ASSERT_FALSE(std::isnan(difference)) << "step " << step << ": a gradient was not downloaded";
    EXPECT_LT(std::sqrt(difference / norm), 1e-6) << "step " << step;
    // Parameters change on the host between calls, as an optimizer changes them.
    for (Model* model : {&on_cpu, &off_host}) {
      auto params = model->parameters();
      const auto grads = model->gradients();
      for (std::size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * grads[i];
    }
  }
  EXPECT_EQ(first_loss_off, first_loss_cpu);
  const Batch test = random_batch(reference, 7, 999);
  std::vector<std::int32_t> want_classes(7, -1), got_classes(7, -1);
  const BatchResult want = on_cpu.evaluate_batch(test.x.data(), test.labels.data(), 7,
                                                 want_classes.data());
  const BatchResult got = off_host.evaluate_batch(test.x.data(), nullptr, 7, got_classes.data());
  EXPECT_EQ(got_classes, want_classes);
  EXPECT_EQ(got.correct, 0);  // no labels: nothing to count
  EXPECT_NEAR(off_host.evaluate_batch(test.x.data(), test.labels.data(), 7, nullptr).loss,
              want.loss, 1e-6 * want.loss);
  const std::size_t parameter_bytes = reference.parameter_count() * sizeof(float);
  EXPECT_GE(backend.uploaded, 6 * parameter_bytes);    // every call uploads the parameters
  EXPECT_GE(backend.downloaded, 3 * parameter_bytes);  // every training call downloads gradients
}

TEST(ModelOffHost, ACopyComputesOnTheCpuAndBuffersAreReusedOnceGrown) {
  OffHostCompute backend;  // before the model: it must outlive the buffers the model holds in it
  Model model = Model::build(small_cnn(), 3);
  model.compute_on(backend);
  const Model copy = model;
  EXPECT_TRUE(copy.computes_on_host());
  core::Rng rng(1);
  const Batch big = random_batch(model, 8, 1), small = random_batch(model, 4, 2);
  model.train_batch(big.x.data(), big.labels.data(), 8, rng);
  const std::size_t after_first = backend.allocations;
  EXPECT_GT(after_first, 0u);
  model.train_batch(small.x.data(), small.labels.data(), 4, rng);
  model.train_batch(big.x.data(), big.labels.data(), 8, rng);
  EXPECT_EQ(backend.allocations, after_first);
}

}  // namespace
}  // namespace gradshare::nn
