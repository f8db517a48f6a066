// cuda_compute.cpp: CudaCompute, forwarding each Compute call to its kernels/cuda twin.
#include "kernels/cuda/cuda_compute.h"

#include "kernels/cuda/cublas_library.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/stream.h"

namespace gradshare::kernels::cuda {

CudaCompute::CudaCompute() {
  require_cuda_device();
  sums_.reserve(1);
  stream_ = create_stream();
  try {
    GS_CUBLAS_CHECK(cublas().create(&blas_));
    GS_CUBLAS_CHECK(cublas().set_stream(blas_, stream_));
  } catch (...) {
    if (blas_ != nullptr) cublas().destroy(blas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaCompute::~CudaCompute() {
  cudaStreamSynchronize(stream_);  // the buffers below must outlive the work that uses them
  cublas().destroy(blas_);
  cudaStreamDestroy(stream_);
}

void CudaCompute::synchronize() { GS_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaCompute::gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                       const float* a, int lda, const float* b, int ldb, float beta, float* c,
                       int ldc) {
  cuda::gemm(blas_, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void CudaCompute::gemm_batch(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
                             const float* a, int lda, std::size_t stride_a, const float* b,
                             int ldb, std::size_t stride_b, float beta, float* c, int ldc,
                             std::size_t stride_c, std::size_t count) {
  cuda::gemm_batch(blas_, transpose_a, transpose_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                   stride_b, beta, c, ldc, stride_c, count);
}

void CudaCompute::bias_activation(float* y, const float* bias, std::size_t outer,
                                  std::size_t channels, std::size_t inner,
                                  nn::Activation activation, float alpha) {
  cuda::bias_activation(y, bias, outer, channels, inner, activation, alpha, stream_);
}

void CudaCompute::activation_backward(const float* y, float* dy, std::size_t n,
                                      nn::Activation activation, float alpha) {
  cuda::activation_backward(y, dy, n, activation, alpha, stream_);
}

void CudaCompute::bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                                std::size_t inner) {
  cuda::bias_gradient(dy, db, outer, channels, inner, stream_);
}

void CudaCompute::im2col(const float* images, const nn::ConvGeometry& g, std::size_t count,
                         float* cols) {
  cuda::im2col(images, g, count, cols, stream_);
}

void CudaCompute::col2im(const float* cols, const nn::ConvGeometry& g, std::size_t count,
                         float* images) {
  cuda::col2im(cols, g, count, images, stream_);
}

void CudaCompute::maxpool_forward(const float* x, const nn::PoolGeometry& g, std::size_t planes,
                                  float* y, std::int32_t* argmax) {
  cuda::maxpool_forward(x, g, planes, y, argmax, stream_);
}

void CudaCompute::maxpool_backward(const float* dy, const std::int32_t* argmax,
                                   const nn::PoolGeometry& g, std::size_t planes, float* dx) {
  cuda::maxpool_backward(dy, argmax, g, planes, dx, stream_);
}

void CudaCompute::dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                                  std::uint64_t seed) {
  cuda::dropout_forward(x, y, mask, n, rate, seed, stream_);
}

void CudaCompute::multiply(const float* a, const float* b, float* out, std::size_t n) {
  cuda::multiply(a, b, out, n, stream_);
}

void CudaCompute::axpy(float alpha, const float* x, float* y, std::size_t n) {
  cuda::axpy(alpha, x, y, n, stream_);
}

nn::LossSums CudaCompute::softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                                std::size_t batch, std::size_t classes,
                                                float grad_scale, float* dlogits,
                                                std::int32_t* predicted) {
  void* workspace = softmax_workspace_.reserve(softmax_workspace_bytes(batch));
  cuda::softmax_cross_entropy(logits, labels, batch, classes, grad_scale, dlogits, predicted,
                              workspace, stream_);
  GS_CUDA_CHECK(cudaMemcpyAsync(sums_.data(), workspace, sizeof(DeviceLossSums),
                                cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return {sums_.data()->loss_sum, static_cast<std::int64_t>(sums_.data()->correct)};
}

void* CudaCompute::allocate(std::size_t bytes) {
  void* memory = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&memory, bytes == 0 ? 1 : bytes));
  const cudaError_t zeroed = cudaMemset(memory, 0, bytes);
  if (zeroed != cudaSuccess) {
    cudaFree(memory);
    cuda_failed(zeroed, "cudaMemset", __FILE__, __LINE__);
  }
  return memory;
}

// cudaFree waits for the device, so no enqueued work still uses the memory; a failure here
// (the runtime already unloading at exit) leaves nothing to do.
void CudaCompute::release(void* memory) noexcept { cudaFree(memory); }

void CudaCompute::upload(void* to, const void* from, std::size_t bytes) {
  GS_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaCompute::download(void* to, const void* from, std::size_t bytes) {
  GS_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream_));
  synchronize();
}

}  // namespace gradshare::kernels::cuda
