// activation.cu: bias + activation, the activation derivative and the bias gradient on the GPU,
// twins of kernels/cpu/activation.cpp. The derivative and the bias gradient are bit-identical
// (the bias gradient adds in the CPU's order: per row with its eight partial sums, rows in
// sequence); the forward pass differs only where expm1f/tanhf/expf round differently.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

template <Activation A>
__device__ inline float apply(float x, float alpha) {
  if constexpr (A == Activation::kNone) return x;
  if constexpr (A == Activation::kRelu) return x > 0.0f ? x : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return x > 0.0f ? x : alpha * x;
  if constexpr (A == Activation::kElu) return x > 0.0f ? x : alpha * expm1f(x);
  if constexpr (A == Activation::kTanh) return tanhf(x);
  if constexpr (A == Activation::kSigmoid) return 1.0f / (1.0f + expf(-x));
}

// f'(x) through y = f(x), as on the CPU.
template <Activation A>
__device__ inline float derivative(float y, float alpha) {
  if constexpr (A == Activation::kNone) return 1.0f;
  if constexpr (A == Activation::kRelu) return y > 0.0f ? 1.0f : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return y > 0.0f ? 1.0f : alpha;
  if constexpr (A == Activation::kElu) return y > 0.0f ? 1.0f : y + alpha;
  if constexpr (A == Activation::kTanh) return 1.0f - y * y;
  if constexpr (A == Activation::kSigmoid) return y * (1.0f - y);
}

template <Activation A>
__global__ void bias_activation_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                       std::size_t total, std::size_t channels, std::size_t inner,
                                       float alpha) {
  const std::size_t i = global_index();
  if (i >= total) return;
  float x = y[i];
  // The CPU adds a zero bias on feature maps but none on dense rows (it matters for -0.0).
  if (bias != nullptr) {
    x = x + bias[(i / inner) % channels];
  } else if (inner != 1) {
    x = x + 0.0f;
  }
  y[i] = apply<A>(x, alpha);
}

template <Activation A>
__global__ void backward_kernel(const float* __restrict__ y, float* __restrict__ dy, std::size_t n,
                                float alpha) {
  const std::size_t i = global_index();
  if (i < n) dy[i] *= derivative<A>(y[i], alpha);
}

template <template <Activation> class Launch, class... Args>
void dispatch(Activation activation, Args... args) {
  switch (activation) {
    case Activation::kNone:
      return Launch<Activation::kNone>::run(args...);
    case Activation::kRelu:
      return Launch<Activation::kRelu>::run(args...);
    case Activation::kLeakyRelu:
      return Launch<Activation::kLeakyRelu>::run(args...);
    case Activation::kElu:
      return Launch<Activation::kElu>::run(args...);
    case Activation::kTanh:
      return Launch<Activation::kTanh>::run(args...);
    case Activation::kSigmoid:
      return Launch<Activation::kSigmoid>::run(args...);
  }
}

template <Activation A>
struct ForwardLaunch {
  static void run(float* y, const float* bias, std::size_t total, std::size_t channels,
                  std::size_t inner, float alpha, cudaStream_t stream) {
    bias_activation_kernel<A>
        <<<grid_for(total), kBlockThreads, 0, stream>>>(y, bias, total, channels, inner, alpha);
  }
};

template <Activation A>
struct BackwardLaunch {
  static void run(const float* y, float* dy, std::size_t n, float alpha, cudaStream_t stream) {
    backward_kernel<A><<<grid_for(n), kBlockThreads, 0, stream>>>(y, dy, n, alpha);
  }
};

// Dense rows: db[c] = sum over o of dy[o][c], in increasing o (one thread per channel).
__global__ void bias_gradient_rows(const float* __restrict__ dy, float* __restrict__ db,
                                   std::size_t outer, std::size_t channels) {
  const std::size_t c = global_index();
  if (c >= channels) return;
  float sum = 0.0f;
  for (std::size_t o = 0; o < outer; ++o) sum += dy[o * channels + c];
  db[c] = sum;
}

// Feature maps: one block per channel. Each group of 8 threads sums one map the CPU's way
// (8 strided partial sums, then the tail, then the partials in order); thread 0 adds the maps
// in increasing o.
constexpr int kGroup = 8;
constexpr int kGroups = kBlockThreads / kGroup;

__global__ void __launch_bounds__(kBlockThreads)
    bias_gradient_maps(const float* __restrict__ dy, float* __restrict__ db, std::size_t outer,
                       std::size_t channels, std::size_t inner) {
  __shared__ float map_sums[kGroups];
  const std::size_t c = blockIdx.x;
  const int group = static_cast<int>(threadIdx.x) / kGroup;
  const int j = static_cast<int>(threadIdx.x) % kGroup;
  const std::size_t whole = inner / kGroup * kGroup;
  float total = 0.0f;
  for (std::size_t o0 = 0; o0 < outer; o0 += kGroups) {
    const std::size_t o = o0 + static_cast<std::size_t>(group);
    const std::size_t map = (o * channels + c) * inner;  // used only when o < outer
    float partial = 0.0f;
    if (o < outer) {
      for (std::size_t i = 0; i < whole; i += kGroup) {
        partial += dy[map + i + static_cast<std::size_t>(j)];
      }
    }
    float partials[kGroup];
#pragma unroll
    for (int q = 0; q < kGroup; ++q) partials[q] = __shfl_sync(0xFFFFFFFFu, partial, q, kGroup);
    if (j == 0 && o < outer) {
      float sum = 0.0f;
      for (std::size_t i = whole; i < inner; ++i) sum += dy[map + i];
#pragma unroll
      for (int q = 0; q < kGroup; ++q) sum += partials[q];
      map_sums[group] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (std::size_t g = 0; g < kGroups && o0 + g < outer; ++g) total += map_sums[g];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = total;
}

}  // namespace

void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                     std::size_t inner, Activation activation, float alpha, cudaStream_t stream) {
  const std::size_t total = outer * channels * inner;
  if (total == 0 || (activation == Activation::kNone && bias == nullptr)) return;
  dispatch<ForwardLaunch>(activation, y, bias, total, channels, inner, alpha, stream);
  GS_CUDA_CHECK_LAUNCH();
}

void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                         float alpha, cudaStream_t stream) {
  if (n == 0 || activation == Activation::kNone) return;
  dispatch<BackwardLaunch>(activation, y, dy, n, alpha, stream);
  GS_CUDA_CHECK_LAUNCH();
}

void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                   std::size_t inner, cudaStream_t stream) {
  if (channels == 0) return;
  if (inner == 1) {
    bias_gradient_rows<<<grid_for(channels), kBlockThreads, 0, stream>>>(dy, db, outer, channels);
  } else {
    GS_CHECK(channels <= 0x7FFFFFFFu, "too many channels");
    bias_gradient_maps<<<static_cast<unsigned>(channels), kBlockThreads, 0, stream>>>(
        dy, db, outer, channels, inner);
  }
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda
