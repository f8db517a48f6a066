// cpu_compute.cpp: the CPU implementation of nn::Compute, forwarding to kernels/cpu.
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "nn/compute.h"

namespace gradshare::nn {
namespace {

namespace cpu = kernels::cpu;

std::size_t image_size(const ConvGeometry& g) {
  return static_cast<std::size_t>(g.channels) * g.height * g.width;
}

class CpuCompute final : public Compute {
 public:
  void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) override {
    cpu::gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void gemm_batch(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                  const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                  std::size_t stride_b, float beta, float* c, int ldc, std::size_t stride_c,
                  std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i)
      cpu::gemm(transpose_a, transpose_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b,
                ldb, beta, c + i * stride_c, ldc);
  }
  void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                       std::size_t inner, Activation activation, float alpha) override {
    cpu::bias_activation(y, bias, outer, channels, inner, activation, alpha);
  }
  void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                           float alpha) override {
    cpu::activation_backward(y, dy, n, activation, alpha);
  }
  void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                     std::size_t inner) override {
    cpu::bias_gradient(dy, db, outer, channels, inner);
  }
  void im2col(const float* images, const ConvGeometry& g, std::size_t count,
              float* cols) override {
    const std::size_t image = image_size(g), col = g.col_rows() * g.col_cols();
    for (std::size_t i = 0; i < count; ++i) cpu::im2col(images + i * image, g, cols + i * col);
  }
  void col2im(const float* cols, const ConvGeometry& g, std::size_t count,
              float* images) override {
    const std::size_t image = image_size(g), col = g.col_rows() * g.col_cols();
    for (std::size_t i = 0; i < count; ++i) cpu::col2im(cols + i * col, g, images + i * image);
  }
  void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                       std::int32_t* argmax) override {
    cpu::maxpool_forward(x, g, planes, y, argmax);
  }
  void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                        std::size_t planes, float* dx) override {
    cpu::maxpool_backward(dy, argmax, g, planes, dx);
  }
  void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                       std::uint64_t seed) override {
    cpu::dropout_forward(x, y, mask, n, rate, seed);
  }
  void multiply(const float* a, const float* b, float* out, std::size_t n) override {
    cpu::multiply(a, b, out, n);
  }
  void axpy(float alpha, const float* x, float* y, std::size_t n) override {
    cpu::axpy(alpha, x, y, n);
  }
  LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                                 std::size_t classes, float grad_scale, float* dlogits,
                                 std::int32_t* predicted) override {
    return cpu::softmax_cross_entropy(logits, labels, batch, classes, grad_scale, dlogits,
                                      predicted);
  }

  void* allocate(std::size_t bytes) override {
    void* memory = std::calloc(bytes == 0 ? 1 : bytes, 1);
    if (memory == nullptr) throw std::bad_alloc();
    return memory;
  }
  void release(void* memory) noexcept override { std::free(memory); }
  bool computes_in_host_memory() const override { return true; }
  void upload(void* to, const void* from, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
  void download(void* to, const void* from, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
};

}  // namespace

Compute& cpu_compute() {
  // Never destroyed: a Model with static storage may release its buffers after main returns.
  static CpuCompute* const instance = new CpuCompute;
  return *instance;
}

}  // namespace gradshare::nn
