// layers_device.h: the layers' kernels on device pointers, each the twin of the kernels/cpu
// function of the same name (same arguments and meaning, plus the stream to enqueue on):
//   activation.cu     bias_activation, activation_backward, bias_gradient
//   conv_im2col.cu    im2col, col2im
//   maxpool.cu        maxpool_forward, maxpool_backward
//   softmax.cu        softmax_cross_entropy
//   elementwise.cu    axpy, subtract, multiply, dropout_forward and the optimizers' rules
//   gemm_cublas.cpp   gemm (row-major, through cuBLAS sgemm)
// Results are bit-identical to the CPU twins except where a transcendental function (exp,
// expm1, tanh) or a summation order differs; the gpu tests state each tolerance.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/elementwise.h"

namespace gradshare::kernels::cuda {

using cpu::Activation;
using cpu::AdamStep;
using cpu::ConvGeometry;
using cpu::PoolGeometry;

void gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k,
          float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc);
// gemm for i < count on matrices `stride_*` floats apart (cublasSgemmStridedBatched).
void gemm_batch(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k,
                float alpha, const float* a, int lda, std::size_t stride_a, const float* b,
                int ldb, std::size_t stride_b, float beta, float* c, int ldc,
                std::size_t stride_c, std::size_t count);

void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                     std::size_t inner, Activation activation, float alpha, cudaStream_t stream);
void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                         float alpha, cudaStream_t stream);
void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                   std::size_t inner, cudaStream_t stream);

// `count` images and their im2col matrices, each right after the one before.
void im2col(const float* images, const ConvGeometry& g, std::size_t count, float* cols,
            cudaStream_t stream);
void col2im(const float* cols, const ConvGeometry& g, std::size_t count, float* images,
            cudaStream_t stream);
void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                     std::int32_t* argmax, cudaStream_t stream);
void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                      std::size_t planes, float* dx, cudaStream_t stream);

// The loss sums of softmax_cross_entropy, in device memory at the start of its workspace.
struct DeviceLossSums {
  double loss_sum;
  long long correct;
};
std::size_t softmax_workspace_bytes(std::size_t batch);
// Labels outside [0, classes) are skipped (the caller checks them, as the Model does).
void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                           std::size_t classes, float grad_scale, float* dlogits,
                           std::int32_t* predicted, void* workspace, cudaStream_t stream);

void axpy(float alpha, const float* x, float* y, std::size_t n, cudaStream_t stream);
void subtract(float* params, const float* update, std::size_t n, cudaStream_t stream);
void multiply(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream);
void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                     std::uint64_t seed, cudaStream_t stream);
void sgd_update(const float* g, float* u, std::size_t n, float lr, cudaStream_t stream);
void momentum_update(const float* g, float* velocity, float* u, std::size_t n, float lr,
                     float momentum, bool nesterov, cudaStream_t stream);
void adam_update(const float* g, const float* params, float* m, float* v, float* u, std::size_t n,
                 const AdamStep& step, cudaStream_t stream);
void rmsprop_update(const float* g, float* s, float* u, std::size_t n, float lr, float decay,
                    float one_minus_decay, float epsilon, cudaStream_t stream);
void adagrad_update(const float* g, float* s, float* u, std::size_t n, float lr, float epsilon,
                    cudaStream_t stream);

}  // namespace gradshare::kernels::cuda
