// dense.h: fully connected layer y = f(x W + b); kernel W is [inputs, units], then bias [units].
// Any input shape is flattened (an NCHW sample is read as one row).
#pragma once

#include "nn/layer.h"

namespace gradshare::nn {

class Dense final : public Layer {
 public:
  Dense(Shape input, std::int64_t units, Activation activation, float alpha);
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Dense>(*this); }

  std::string_view type() const override { return "dense"; }
  std::vector<ParameterBlock> parameter_blocks() const override;
  Activation activation() const override { return activation_; }

  void forward(const Pass& pass, const float* x, float* y) override;
  void backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) override;

 private:
  int inputs_, units_;
  Activation activation_;
  float alpha_;
};

}  // namespace gradshare::nn
