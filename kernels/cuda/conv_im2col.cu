// conv_im2col.cu: im2col and col2im on the GPU, twins of kernels/cpu/conv.cpp. im2col is a
// gather (one thread per column entry); col2im is also a gather, one thread per pixel adding its
// column entries in the CPU's order (kernel row, then kernel column), so both are bit-identical
// and need no atomics.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

// The geometry with the output size, as plain ints for the kernels.
struct Shape {
  int channels, height, width, kernel, stride, padding, out_height, out_width;
};

Shape shape_of(const ConvGeometry& g) {
  return {g.channels, g.height,  g.width,        g.kernel,
          g.stride,   g.padding, g.out_height(), g.out_width()};
}

// One thread per column entry of every image: entry i of image n is col[n * per + i].
__global__ void im2col_kernel(const float* __restrict__ images, Shape s, std::size_t per,
                              std::size_t total, float* __restrict__ cols) {
  const std::size_t at = global_index();
  if (at >= total) return;
  const std::size_t n = at / per, i = at % per;
  const float* image =
      images + n * static_cast<std::size_t>(s.channels) * s.height * s.width;
  float* col = cols + n * per;
  std::size_t t = i;
  const int ox = static_cast<int>(t % s.out_width);
  t /= s.out_width;
  const int oy = static_cast<int>(t % s.out_height);
  t /= s.out_height;
  const int kx = static_cast<int>(t % s.kernel);
  t /= s.kernel;
  const int ky = static_cast<int>(t % s.kernel);
  const std::size_t c = t / s.kernel;
  const int iy = oy * s.stride - s.padding + ky;
  const int ix = ox * s.stride - s.padding + kx;
  const bool inside = iy >= 0 && iy < s.height && ix >= 0 && ix < s.width;
  col[i] = inside ? image[(c * s.height + iy) * s.width + ix] : 0.0f;
}

// Output position along one axis whose window puts kernel offset `k` on input `at`, or -1.
__device__ inline int output_at(int at, int k, int stride, int padding, int out_size) {
  const int t = at + padding - k;
  if (t < 0 || t % stride != 0) return -1;
  const int o = t / stride;
  return o < out_size ? o : -1;
}

// One thread per pixel of every image: pixel i of image n is image[n * per + i].
__global__ void col2im_kernel(const float* __restrict__ cols, Shape s, std::size_t per,
                              std::size_t total, float* __restrict__ images) {
  const std::size_t at = global_index();
  if (at >= total) return;
  const std::size_t n = at / per, i = at % per;
  const std::size_t plane = static_cast<std::size_t>(s.out_height) * s.out_width;
  const float* col = cols + n * static_cast<std::size_t>(s.channels) * s.kernel * s.kernel * plane;
  float* image = images + n * per;
  const int ix = static_cast<int>(i % s.width);
  const int iy = static_cast<int>(i / s.width % s.height);
  const std::size_t c = i / (static_cast<std::size_t>(s.width) * s.height);
  float sum = 0.0f;
  for (int ky = 0; ky < s.kernel; ++ky) {
    const int oy = output_at(iy, ky, s.stride, s.padding, s.out_height);
    if (oy < 0) continue;
    for (int kx = 0; kx < s.kernel; ++kx) {
      const int ox = output_at(ix, kx, s.stride, s.padding, s.out_width);
      if (ox < 0) continue;
      const std::size_t row = (c * s.kernel + ky) * s.kernel + kx;
      sum += col[row * plane + static_cast<std::size_t>(oy) * s.out_width + ox];
    }
  }
  image[i] = sum;
}

}  // namespace

void im2col(const float* images, const ConvGeometry& g, std::size_t count, float* cols,
            cudaStream_t stream) {
  const std::size_t per = g.col_rows() * g.col_cols(), total = per * count;
  if (total == 0) return;
  im2col_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(images, shape_of(g), per, total,
                                                                 cols);
  GS_CUDA_CHECK_LAUNCH();
}

void col2im(const float* cols, const ConvGeometry& g, std::size_t count, float* images,
            cudaStream_t stream) {
  const std::size_t per = static_cast<std::size_t>(g.channels) * g.height * g.width;
  const std::size_t total = per * count;
  if (total == 0) return;
  col2im_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(cols, shape_of(g), per, total,
                                                                 images);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda
