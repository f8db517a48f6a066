// elementwise.cu: the element-wise training loops on the GPU, twins of kernels/cpu/elementwise:
// axpy, subtract, multiply, inverted dropout (the same (seed, index) hash, so the same mask) and
// every optimizer's rule. Built without FMA contraction and with IEEE division and square root,
// each element goes through the CPU's operations in the CPU's order: bit-identical results.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

// splitmix64 finaliser, as in kernels/cpu/elementwise.cpp.
__device__ inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Runs op(i) for every i < n, one thread each.
template <class Op>
__global__ void for_each_kernel(std::size_t n, Op op) {
  const std::size_t i = global_index();
  if (i < n) op(i);
}

template <class Op>
void for_each(std::size_t n, cudaStream_t stream, Op op) {
  if (n == 0) return;
  for_each_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(n, op);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void axpy(float alpha, const float* x, float* y, std::size_t n, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) { y[i] += alpha * x[i]; });
}

void subtract(float* params, const float* update, std::size_t n, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) { params[i] -= update[i]; });
}

void multiply(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) { out[i] = a[i] * b[i]; });
}

void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                     std::uint64_t seed, cudaStream_t stream) {
  // The CPU's constants, computed the CPU's way on the host.
  const auto threshold = static_cast<std::uint64_t>(static_cast<double>(rate) * 16777216.0);
  const float keep_scale = 1.0f / (1.0f - rate);
  for_each(n, stream, [=] __device__(std::size_t i) {
    const bool keep = (mix(seed ^ (i * 0xd6e8feb86659fd93ULL)) >> 40) >= threshold;
    mask[i] = keep ? keep_scale : 0.0f;
    y[i] = x[i] * mask[i];
  });
}

void sgd_update(const float* g, float* u, std::size_t n, float lr, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) { u[i] = lr * g[i]; });
}

void momentum_update(const float* g, float* velocity, float* u, std::size_t n, float lr,
                     float momentum, bool nesterov, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) {
    const float v = momentum * velocity[i] + g[i];
    velocity[i] = v;
    u[i] = nesterov ? lr * (g[i] + momentum * v) : lr * v;
  });
}

void adam_update(const float* g, const float* params, float* m, float* v, float* u, std::size_t n,
                 const AdamStep& step, cudaStream_t stream) {
  const AdamStep s = step;
  for_each(n, stream, [=] __device__(std::size_t i) {
    const float mi = s.beta1 * m[i] + s.one_minus_beta1 * g[i];
    const float vi = s.beta2 * v[i] + s.one_minus_beta2 * (g[i] * g[i]);
    m[i] = mi;
    v[i] = vi;
    float ui = s.step_size * mi / (sqrtf(vi) * s.inv_sqrt_bias2 + s.epsilon);
    if (s.decoupled_decay != 0.0f) ui += s.decoupled_decay * params[i];
    u[i] = ui;
  });
}

void rmsprop_update(const float* g, float* s, float* u, std::size_t n, float lr, float decay,
                    float one_minus_decay, float epsilon, cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) {
    const float si = decay * s[i] + one_minus_decay * (g[i] * g[i]);
    s[i] = si;
    u[i] = lr * g[i] / (sqrtf(si) + epsilon);
  });
}

void adagrad_update(const float* g, float* s, float* u, std::size_t n, float lr, float epsilon,
                    cudaStream_t stream) {
  for_each(n, stream, [=] __device__(std::size_t i) {
    const float si = s[i] + g[i] * g[i];
    s[i] = si;
    u[i] = lr * g[i] / (sqrtf(si) + epsilon);
  });
}

}  // namespace gradshare::kernels::cuda
