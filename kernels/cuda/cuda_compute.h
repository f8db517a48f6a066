// cuda_compute.h: nn::Compute on the GPU. Every pointer a layer passes is a device pointer; the
// work is enqueued on this backend's stream (cuBLAS for gemm, kernels/cuda for the rest) and
// only softmax_cross_entropy waits for it, to return the loss sums. Not thread-safe: one per
// thread (a Model replica), like the work buffers it owns.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/layers_device.h"
#include "nn/compute.h"

namespace gradshare::kernels::cuda {

class CudaCompute final : public nn::Compute {
 public:
  // On the current device, with its own stream and cuBLAS handle. Requires a GPU
  // (require_cuda_device() says why there is none).
  CudaCompute();
  ~CudaCompute() override;
  CudaCompute(const CudaCompute&) = delete;
  CudaCompute& operator=(const CudaCompute&) = delete;

  cudaStream_t stream() const { return stream_; }
  void synchronize();  // waits for everything enqueued so far

  void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) override;
  void gemm_batch(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                  const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                  std::size_t stride_b, float beta, float* c, int ldc, std::size_t stride_c,
                  std::size_t count) override;
  void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                       std::size_t inner, nn::Activation activation, float alpha) override;
  void activation_backward(const float* y, float* dy, std::size_t n, nn::Activation activation,
                           float alpha) override;
  void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                     std::size_t inner) override;
  void im2col(const float* images, const nn::ConvGeometry& g, std::size_t count,
              float* cols) override;
  void col2im(const float* cols, const nn::ConvGeometry& g, std::size_t count,
              float* images) override;
  void maxpool_forward(const float* x, const nn::PoolGeometry& g, std::size_t planes, float* y,
                       std::int32_t* argmax) override;
  void maxpool_backward(const float* dy, const std::int32_t* argmax, const nn::PoolGeometry& g,
                        std::size_t planes, float* dx) override;
  void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                       std::uint64_t seed) override;
  void multiply(const float* a, const float* b, float* out, std::size_t n) override;
  void axpy(float alpha, const float* x, float* y, std::size_t n) override;
  nn::LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                     std::size_t batch, std::size_t classes, float grad_scale,
                                     float* dlogits, std::int32_t* predicted) override;

  // Device memory (cudaMalloc); upload enqueues its copy on the stream, download waits for it.
  void* allocate(std::size_t bytes) override;
  void release(void* memory) noexcept override;
  bool computes_in_host_memory() const override { return false; }
  void upload(void* to, const void* from, std::size_t bytes) override;
  void download(void* to, const void* from, std::size_t bytes) override;

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer<unsigned char> softmax_workspace_;
  PinnedBuffer<DeviceLossSums> sums_;
};

}  // namespace gradshare::kernels::cuda
