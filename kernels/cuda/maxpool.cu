// maxpool.cu: max pooling forward and backward on the GPU, twins of kernels/cpu/conv.cpp.
// Forward scans each window in the CPU's order (first maximum wins). Backward is a gather: each
// input pixel adds the gradients of the windows whose argmax it is, in increasing output index
// as the CPU's scatter does, so overlapping windows need no atomics and the sums are identical.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

struct Pool {
  int height, width, pool, stride, out_height, out_width;
};

Pool pool_of(const PoolGeometry& g) {
  return {g.height, g.width, g.pool, g.stride, g.out_height(), g.out_width()};
}

__global__ void forward_kernel(const float* __restrict__ x, Pool p, std::size_t total,
                               float* __restrict__ y, std::int32_t* __restrict__ argmax) {
  const std::size_t i = global_index();
  if (i >= total) return;
  const std::size_t out_plane = static_cast<std::size_t>(p.out_height) * p.out_width;
  const std::size_t plane = i / out_plane;
  const int o = static_cast<int>(i % out_plane);
  const float* in = x + plane * p.height * p.width;
  const int y0 = o / p.out_width * p.stride, x0 = o % p.out_width * p.stride;
  int best = y0 * p.width + x0;
  float best_value = in[best];
  for (int dy = 0; dy < p.pool; ++dy) {
    for (int dx = 0; dx < p.pool; ++dx) {
      const int at = (y0 + dy) * p.width + x0 + dx;
      if (in[at] > best_value) {
        best_value = in[at];
        best = at;
      }
    }
  }
  y[i] = best_value;
  if (argmax != nullptr) argmax[i] = best;
}

// Windows [first, last] along one axis that contain input `at`.
__device__ inline void windows_of(int at, int pool, int stride, int out_size, int& first,
                                  int& last) {
  first = at >= pool ? (at - pool + stride) / stride : 0;
  last = min(at / stride, out_size - 1);
}

__global__ void backward_kernel(const float* __restrict__ dy,
                                const std::int32_t* __restrict__ argmax, Pool p, std::size_t total,
                                float* __restrict__ dx) {
  const std::size_t i = global_index();
  if (i >= total) return;
  const std::size_t in_plane = static_cast<std::size_t>(p.height) * p.width;
  const std::size_t out_plane = static_cast<std::size_t>(p.out_height) * p.out_width;
  const std::size_t plane = i / in_plane;
  const int at = static_cast<int>(i % in_plane);
  const int iy = at / p.width, ix = at % p.width;
  int oy0, oy1, ox0, ox1;
  windows_of(iy, p.pool, p.stride, p.out_height, oy0, oy1);
  windows_of(ix, p.pool, p.stride, p.out_width, ox0, ox1);
  const float* grad = dy + plane * out_plane;
  const std::int32_t* arg = argmax + plane * out_plane;
  float sum = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy) {
    for (int ox = ox0; ox <= ox1; ++ox) {
      const int o = oy * p.out_width + ox;
      if (arg[o] == at) sum += grad[o];
    }
  }
  dx[i] = sum;
}

}  // namespace

void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                     std::int32_t* argmax, cudaStream_t stream) {
  const std::size_t total =
      planes * static_cast<std::size_t>(g.out_height()) * static_cast<std::size_t>(g.out_width());
  if (total == 0) return;
  forward_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(x, pool_of(g), total, y, argmax);
  GS_CUDA_CHECK_LAUNCH();
}

void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                      std::size_t planes, float* dx, cudaStream_t stream) {
  const std::size_t total = planes * static_cast<std::size_t>(g.height) * g.width;
  if (total == 0) return;
  backward_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(dy, argmax, pool_of(g), total, dx);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda
