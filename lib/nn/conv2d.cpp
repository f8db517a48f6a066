// conv2d.cpp: convolution as im2col + one GEMM per image. The im2col matrix of an image is
// rebuilt in backward instead of kept from forward: it then stays in cache for both GEMMs, and
// memory does not grow with the batch.
#include "nn/conv2d.h"

namespace gradshare::nn {

Conv2D::Conv2D(Shape input, std::int64_t filters, std::int64_t kernel, std::int64_t stride,
               std::int64_t padding, Activation activation, float alpha)
    : Layer(input, Shape{filters, (input[1] + 2 * padding - kernel) / stride + 1,
                         (input[2] + 2 * padding - kernel) / stride + 1}),
      filters_(static_cast<int>(filters)),
      activation_(activation),
      alpha_(alpha) {
  geometry_.channels = static_cast<int>(input[0]);
  geometry_.height = static_cast<int>(input[1]);
  geometry_.width = static_cast<int>(input[2]);
  geometry_.kernel = static_cast<int>(kernel);
  geometry_.stride = static_cast<int>(stride);
  geometry_.padding = static_cast<int>(padding);
}

std::vector<ParameterBlock> Conv2D::parameter_blocks() const {
  const std::int64_t k = geometry_.kernel;
  const std::size_t area = static_cast<std::size_t>(k * k);
  return {{"kernel",
           {filters_, geometry_.channels, k, k},
           static_cast<std::size_t>(geometry_.channels) * area,
           static_cast<std::size_t>(filters_) * area},
          {"bias",
           {filters_},
           static_cast<std::size_t>(geometry_.channels) * area,
           static_cast<std::size_t>(filters_) * area}};
}

bool Conv2D::direct() const {
  return geometry_.kernel == 1 && geometry_.stride == 1 && geometry_.padding == 0;
}

const float* Conv2D::columns(const Pass& pass, const float* image) {
  if (direct()) return image;
  float* col = col_.get(geometry_.col_rows() * geometry_.col_cols(), *pass.compute);
  pass.compute->im2col(image, geometry_, col);
  return col;
}

void Conv2D::forward(const Pass& pass, const float* x, float* y) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t in_size = input_size(), out_size = output_size();
  for (std::size_t n = 0; n < pass.batch; ++n) {
    const float* col = columns(pass, x + n * in_size);
    pass.compute->gemm(false, false, filters_, pixels, rows, 1.0f, pass.params, rows, col, pixels,
                       0.0f, y + n * out_size, pixels);
  }
  pass.compute->bias_activation(y, pass.params + static_cast<std::size_t>(filters_) * rows,
                                pass.batch, static_cast<std::size_t>(filters_),
                                static_cast<std::size_t>(pixels), activation_, alpha_);
}

void Conv2D::backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t in_size = input_size(), out_size = output_size();
  float* dkernel = pass.grads;
  pass.compute->activation_backward(y, dy, pass.batch * out_size, activation_, alpha_);
  pass.compute->bias_gradient(dy, pass.grads + static_cast<std::size_t>(filters_) * rows,
                              pass.batch, static_cast<std::size_t>(filters_),
                              static_cast<std::size_t>(pixels));
  for (std::size_t n = 0; n < pass.batch; ++n) {
    const float* dy_n = dy + n * out_size;
    const float* col = columns(pass, x + n * in_size);
    // dW (+)= dy_n col^T; the first image overwrites, the rest accumulate.
    pass.compute->gemm(false, true, filters_, rows, pixels, 1.0f, dy_n, pixels, col, pixels,
                       n == 0 ? 0.0f : 1.0f, dkernel, rows);
    if (dx == nullptr) continue;
    // dcol = W^T dy_n, folded back onto the image.
    float* dx_n = dx + n * in_size;
    if (direct()) {
      pass.compute->gemm(true, false, rows, pixels, filters_, 1.0f, pass.params, rows, dy_n, pixels,
                         0.0f, dx_n, pixels);
      continue;
    }
    float* dcol = dcol_.get(geometry_.col_rows() * geometry_.col_cols(), *pass.compute);
    pass.compute->gemm(true, false, rows, pixels, filters_, 1.0f, pass.params, rows, dy_n, pixels,
                       0.0f, dcol, pixels);
    pass.compute->col2im(dcol, geometry_, dx_n);
  }
}

}  // namespace gradshare::nn
