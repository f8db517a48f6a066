// codec_clip.cu: the residual clip on the GPU, the twin of kernels/cpu's clip: every |r_j| >
// limit becomes copysign(limit, r_j) (bit-identical to the CPU) and the removed mass is summed
// in double, per block and then over the blocks in a fixed order, so the sum is deterministic
// for a given n (its last bits differ from the CPU twins', which add in other orders).
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/cuda_check.h"

namespace gradshare::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 1024;

std::size_t clip_blocks(std::size_t n) {
  const std::size_t groups = (n + 3) / 4;
  const std::size_t blocks = (groups + kThreads - 1) / kThreads;
  return blocks < 1 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks;
}

// Clamps x in place; returns the mass it removed.
__device__ inline double clamp(float& x, float limit) {
  const float a = fabsf(x);
  if (!(a > limit)) return 0.0;
  x = copysignf(limit, x);
  return static_cast<double>(a - limit);
}

// Sums v over the block in a fixed tree order; the result is valid in thread 0.
__device__ inline double block_sum(double v) {
  __shared__ double partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? partial[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  }
  return v;
}

template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    clip_kernel(float* __restrict__ r, std::size_t n, float limit, double* __restrict__ partials) {
  double mass = 0.0;
  const std::size_t stride = std::size_t{gridDim.x} * kThreads;
  const std::size_t first = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  std::size_t scalar_from = 0;
  if constexpr (kVector) {
    float4* r4 = reinterpret_cast<float4*>(r);
    for (std::size_t g = first; g < n / 4; g += stride) {
      float4 x = r4[g];
      const double removed =
          clamp(x.x, limit) + clamp(x.y, limit) + clamp(x.z, limit) + clamp(x.w, limit);
      if (removed > 0.0) {
        r4[g] = x;
        mass += removed;
      }
    }
    scalar_from = n / 4 * 4;
  }
  for (std::size_t i = scalar_from + first; i < n; i += stride) {
    float x = r[i];
    const double removed = clamp(x, limit);
    if (removed > 0.0) {
      r[i] = x;
      mass += removed;
    }
  }
  mass = block_sum(mass);
  if (threadIdx.x == 0) partials[blockIdx.x] = mass;
}

__global__ void __launch_bounds__(kThreads)
    sum_kernel(const double* __restrict__ partials, std::size_t blocks, double* result) {
  double sum = 0.0;
  for (std::size_t i = threadIdx.x; i < blocks; i += kThreads) sum += partials[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *result = sum;
}

}  // namespace

std::size_t clip_workspace_bytes(std::size_t) { return sizeof(double) * (1 + kMaxBlocks); }

void enqueue_clip(float* r, std::size_t n, float limit, void* workspace, cudaStream_t stream) {
  auto* result = static_cast<double*>(workspace);
  double* partials = result + 1;
  const std::size_t blocks = clip_blocks(n);
  const auto grid = static_cast<unsigned>(blocks);
  if ((reinterpret_cast<std::uintptr_t>(r) & 15u) == 0) {
    clip_kernel<true><<<grid, kThreads, 0, stream>>>(r, n, limit, partials);
  } else {
    clip_kernel<false><<<grid, kThreads, 0, stream>>>(r, n, limit, partials);
  }
  GS_CUDA_CHECK_LAUNCH();
  sum_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, result);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda
