// conv2d.cpp: convolution as im2col + GEMM. On the CPU one image at a time: the im2col matrix
// of an image is rebuilt in backward instead of kept from forward, so it stays in cache for both
// GEMMs and memory does not grow with the batch. Off host memory (the GPU) the whole batch at
// once: each launch costs microseconds, and one image's work is far too small to fill the device,
// so a step makes a few batched calls (cuBLAS strided-batched GEMMs) instead of several hundred.
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

const float* Conv2D::columns(const Pass& pass, const float* images, std::size_t count) {
  if (direct()) return images;
  float* cols = col_.get(count * geometry_.col_rows() * geometry_.col_cols(), *pass.compute);
  pass.compute->im2col(images, geometry_, count, cols);
  return cols;
}

void Conv2D::forward(const Pass& pass, const float* x, float* y) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t in_size = input_size(), out_size = output_size();
  if (pass.compute->computes_in_host_memory()) {
    for (std::size_t n = 0; n < pass.batch; ++n) {
      const float* col = columns(pass, x + n * in_size, 1);
      pass.compute->gemm(false, false, filters_, pixels, rows, 1.0f, pass.params, rows, col,
                         pixels, 0.0f, y + n * out_size, pixels);
    }
  } else {
    const float* cols = columns(pass, x, pass.batch);
    pass.compute->gemm_batch(false, false, filters_, pixels, rows, 1.0f, pass.params, rows, 0,
                             cols, pixels, geometry_.col_rows() * geometry_.col_cols(), 0.0f, y,
                             pixels, out_size, pass.batch);
  }
  pass.compute->bias_activation(y, pass.params + static_cast<std::size_t>(filters_) * rows,
                                pass.batch, static_cast<std::size_t>(filters_),
                                static_cast<std::size_t>(pixels), activation_, alpha_);
}

void Conv2D::backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t out_size = output_size();
  pass.compute->activation_backward(y, dy, pass.batch * out_size, activation_, alpha_);
  pass.compute->bias_gradient(dy, pass.grads + static_cast<std::size_t>(filters_) * rows,
                              pass.batch, static_cast<std::size_t>(filters_),
                              static_cast<std::size_t>(pixels));
  if (pass.compute->computes_in_host_memory()) {
    backward_per_image(pass, x, dy, dx);
  } else {
    backward_batched(pass, x, dy, dx);
  }
}

void Conv2D::backward_per_image(const Pass& pass, const float* x, const float* dy, float* dx) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t in_size = input_size(), out_size = output_size();
  for (std::size_t n = 0; n < pass.batch; ++n) {
    const float* dy_n = dy + n * out_size;
    const float* col = columns(pass, x + n * in_size, 1);
    // dW (+)= dy_n col^T; the first image overwrites, the rest accumulate.
    pass.compute->gemm(false, true, filters_, rows, pixels, 1.0f, dy_n, pixels, col, pixels,
                       n == 0 ? 0.0f : 1.0f, pass.grads, rows);
    if (dx == nullptr) continue;
    // dcol = W^T dy_n, folded back onto the image.
    float* dx_n = dx + n * in_size;
    float* dcol = direct() ? dx_n : dcol_.get(geometry_.col_rows() * geometry_.col_cols(),
                                               *pass.compute);
    pass.compute->gemm(true, false, rows, pixels, filters_, 1.0f, pass.params, rows, dy_n, pixels,
                       0.0f, dcol, pixels);
    if (!direct()) pass.compute->col2im(dcol, geometry_, 1, dx_n);
  }
}

void Conv2D::backward_batched(const Pass& pass, const float* x, const float* dy, float* dx) {
  const int rows = static_cast<int>(geometry_.col_rows());
  const int pixels = static_cast<int>(geometry_.col_cols());
  const std::size_t in_size = input_size(), out_size = output_size();
  const std::size_t col_size = geometry_.col_rows() * geometry_.col_cols();
  const std::size_t kernel_size = static_cast<std::size_t>(filters_) * rows;
  Compute& compute = *pass.compute;
  const float* cols = columns(pass, x, pass.batch);
  // Every image's dW_n = dy_n col_n^T, then their sum over the batch as ones^T [dW_0; dW_1; ...].
  float* per_image = image_kernels_.get(pass.batch * kernel_size, compute);
  compute.gemm_batch(false, true, filters_, rows, pixels, 1.0f, dy, pixels, out_size, cols,
                     pixels, col_size, 0.0f, per_image, rows, kernel_size, pass.batch);
  ones_host_.assign(pass.batch, 1.0f);
  float* ones = ones_.get(pass.batch, compute);
  compute.upload(ones, ones_host_.data(), pass.batch * sizeof(float));
  const int batch = static_cast<int>(pass.batch), kernel_values = static_cast<int>(kernel_size);
  compute.gemm(false, false, 1, kernel_values, batch, 1.0f, ones, batch, per_image, kernel_values,
               0.0f, pass.grads, kernel_values);
  if (dx == nullptr) return;
  // dcol_n = W^T dy_n for every image, folded back onto the images.
  float* dcols = direct() ? dx : dcol_.get(pass.batch * col_size, compute);
  compute.gemm_batch(true, false, rows, pixels, filters_, 1.0f, pass.params, rows, 0, dy, pixels,
                     out_size, 0.0f, dcols, pixels, direct() ? in_size : col_size, pass.batch);
  if (!direct()) compute.col2im(dcols, geometry_, pass.batch, dx);
}

}  // namespace gradshare::nn
