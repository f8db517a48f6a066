// dropout.h: inverted dropout. While training each activation is zeroed with probability
// `rate` and the survivors scaled by 1 / (1 - rate); at inference the layer is the identity.
#pragma once

#include "nn/layer.h"

namespace gradshare::nn {

class Dropout final : public Layer {
 public:
  Dropout(Shape input, double rate) : Layer(input, input), rate_(static_cast<float>(rate)) {}
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Dropout>(*this); }

  std::string_view type() const override { return "dropout"; }
  bool passes_through(bool training) const override { return !training || rate_ == 0.0f; }
  void forward(const Pass& pass, const float* x, float* y) override;
  void backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) override;

 private:
  float rate_;
  Scratch<float> mask_;  // 0 or 1 / (1 - rate) per activation of the last training pass
};

}  // namespace gradshare::nn
