// conv2d.h: 2-D convolution on NCHW samples with a square kernel, stride and zero padding,
// y = f(W * x + b). Kernel W is [filters, channels, k, k], then bias [filters].
#pragma once

#include "nn/layer.h"

namespace gradshare::nn {

class Conv2D final : public Layer {
 public:
  // input: [channels, height, width]; the caller has checked that the kernel fits.
  Conv2D(Shape input, std::int64_t filters, std::int64_t kernel, std::int64_t stride,
         std::int64_t padding, Activation activation, float alpha);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Conv2D>(*this); }

  std::string_view type() const override { return "conv2d"; }
  std::vector<ParameterBlock> parameter_blocks() const override;
  Activation activation() const override { return activation_; }

  void forward(const Pass& pass, const float* x, float* y) override;
  void backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) override;

 private:
  // A 1x1 kernel with stride 1 and no padding needs no im2col: the image is its own matrix.
  bool direct() const;
  // The im2col matrices of `count` images (or the images themselves when direct()).
  const float* columns(const Pass& pass, const float* images, std::size_t count);
  // The kernel's gradient and dx, on the CPU image by image, elsewhere for the batch at once.
  void backward_per_image(const Pass& pass, const float* x, const float* dy, float* dx);
  void backward_batched(const Pass& pass, const float* x, const float* dy, float* dx);

  ConvGeometry geometry_;
  int filters_;
  Activation activation_;
  float alpha_;
  Scratch<float> col_, dcol_;
  // The batched backward's per-image kernel gradients and the ones that sum them.
  Scratch<float> image_kernels_, ones_;
  std::vector<float> ones_host_;
};

}  // namespace gradshare::nn
