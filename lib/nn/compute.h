// compute.h: the backend interface every layer computes through, and the CPU backend.
// Layers hand it raw pointers and sizes only, never touch tensor elements themselves, so the
// CUDA backend (kernels/cuda/cuda_compute.h) implements the same calls on device pointers with
// cuBLAS and kernels; layers' work buffers come from the backend's own memory (Scratch).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/softmax.h"

namespace gradshare::nn {

using kernels::cpu::Activation;
using kernels::cpu::ConvGeometry;
using kernels::cpu::LossSums;
using kernels::cpu::PoolGeometry;

class Compute {
 public:
  virtual ~Compute() = default;

  // Row-major C[m x n] = alpha * op(A) op(B) + beta * C (see kernels/cpu/gemm.h).
  virtual void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                    const float* a, int lda, const float* b, int ldb, float beta, float* c,
                    int ldc) = 0;
  // gemm for i < count on a + i * stride_a, b + i * stride_b and c + i * stride_c (a stride of
  // 0 uses the same matrix every time): one call for a whole batch where launches are costly.
  virtual void gemm_batch(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                          const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                          std::size_t stride_b, float beta, float* c, int ldc,
                          std::size_t stride_c, std::size_t count) = 0;
  // y = f(y + bias[c]) over [outer][channels][inner]; dy *= f'(y); db = sums of dy per channel.
  virtual void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                               std::size_t inner, Activation activation, float alpha) = 0;
  virtual void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                                   float alpha) = 0;
  virtual void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                             std::size_t inner) = 0;
  // `count` images <-> their im2col matrices, each stored right after the one before.
  virtual void im2col(const float* images, const ConvGeometry& g, std::size_t count,
                      float* cols) = 0;
  virtual void col2im(const float* cols, const ConvGeometry& g, std::size_t count,
                      float* images) = 0;
  virtual void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                               std::int32_t* argmax) = 0;
  virtual void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                                std::size_t planes, float* dx) = 0;
  // Inverted dropout with a mask derived from (seed, element index).
  virtual void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                               std::uint64_t seed) = 0;
  virtual void multiply(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void axpy(float alpha, const float* x, float* y, std::size_t n) = 0;
  // Loss sums, dlogits = (softmax - one_hot) * grad_scale, arg-max (see kernels/cpu/softmax.h).
  virtual LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                         std::size_t batch, std::size_t classes, float grad_scale,
                                         float* dlogits, std::int32_t* predicted) = 0;

  // The memory this backend computes in: the host's for the CPU, the GPU's for CUDA.
  // allocate() returns zeroed memory or throws; release(nullptr) does nothing.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* memory) noexcept = 0;
  // True for host memory: a Model then computes on its own parameter and gradient vectors.
  // Otherwise it uploads the parameters and each batch, and downloads the gradients (download
  // waits for the work enqueued before it).
  virtual bool computes_in_host_memory() const = 0;
  virtual void upload(void* to, const void* from, std::size_t bytes) = 0;
  virtual void download(void* to, const void* from, std::size_t bytes) = 0;
};

// The CPU backend (OpenBLAS and kernels/cpu); stateless, shared by every model of the process.
Compute& cpu_compute();

}  // namespace gradshare::nn
