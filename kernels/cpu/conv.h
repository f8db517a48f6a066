// conv.h: the data movement around convolution and pooling on NCHW tensors: im2col / col2im
// (a convolution becomes one GEMM per image) and max pooling with recorded argmax positions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cpu {

// One image of a 2-D convolution: input [channels][height][width], a square kernel.
struct ConvGeometry {
  int channels = 0, height = 0, width = 0;
  int kernel = 1, stride = 1, padding = 0;
  int out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  // Rows and columns of the im2col matrix.
  std::size_t col_rows() const { return static_cast<std::size_t>(channels) * kernel * kernel; }
  std::size_t col_cols() const {
    return static_cast<std::size_t>(out_height()) * static_cast<std::size_t>(out_width());
  }
};

// col[(c*k + ky)*k + kx][oy*out_w + ox] = image[c][oy*s - p + ky][ox*s - p + kx] (0 outside).
void im2col(const float* image, const ConvGeometry& g, float* col);

// The adjoint of im2col: image = 0, then every col entry is added back to its pixel.
void col2im(const float* col, const ConvGeometry& g, float* image);

// Max pooling over `planes` independent [height][width] planes (batch * channels).
struct PoolGeometry {
  int height = 0, width = 0;
  int pool = 2, stride = 2;
  int out_height() const { return (height - pool) / stride + 1; }
  int out_width() const { return (width - pool) / stride + 1; }
};

// y = window maxima; argmax (nullable) = position of each maximum inside its plane.
void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                     std::int32_t* argmax);

// dx = 0, then dx[argmax] += dy for every output.
void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                      std::size_t planes, float* dx);

}  // namespace gradshare::kernels::cpu
