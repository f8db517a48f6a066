// maxpool2d.h: max pooling over square windows of each channel of an NCHW sample (no padding).
#pragma once

#include "nn/layer.h"

namespace gradshare::nn {

class MaxPool2D final : public Layer {
 public:
  // input: [channels, height, width]; the caller has checked that the window fits.
  MaxPool2D(Shape input, std::int64_t pool, std::int64_t stride);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<MaxPool2D>(*this); }

  std::string_view type() const override { return "maxpool2d"; }
  void forward(const Pass& pass, const float* x, float* y) override;
  void backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) override;

 private:
  PoolGeometry geometry_;
  Scratch<std::int32_t> argmax_;  // where each maximum came from, for backward
};

}  // namespace gradshare::nn
