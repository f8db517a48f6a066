// dense.cpp: forward is one GEMM plus a fused bias+activation pass; backward is two GEMMs
// (dW = x^T dy, dx = dy W^T) and a bias column sum.
#include "nn/dense.h"

namespace gradshare::nn {

Dense::Dense(Shape input, std::int64_t units, Activation activation, float alpha)
    : Layer(input, Shape{units}),
      inputs_(static_cast<int>(element_count(input))),
      units_(static_cast<int>(units)),
      activation_(activation),
      alpha_(alpha) {}

std::vector<ParameterBlock> Dense::parameter_blocks() const {
  const auto in = static_cast<std::size_t>(inputs_), out = static_cast<std::size_t>(units_);
  return {{"kernel", {inputs_, units_}, in, out}, {"bias", {units_}, in, out}};
}

void Dense::forward(const Pass& pass, const float* x, float* y) {
  const int batch = static_cast<int>(pass.batch);
  const float* kernel = pass.params;
  const float* bias = pass.params + static_cast<std::size_t>(inputs_) * units_;
  pass.compute->gemm(false, false, batch, units_, inputs_, 1.0f, x, inputs_, kernel, units_, 0.0f,
                     y, units_);
  pass.compute->bias_activation(y, bias, pass.batch, static_cast<std::size_t>(units_), 1,
                                activation_, alpha_);
}

void Dense::backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) {
  const int batch = static_cast<int>(pass.batch);
  const std::size_t kernel_size = static_cast<std::size_t>(inputs_) * units_;
  pass.compute->activation_backward(y, dy, pass.batch * static_cast<std::size_t>(units_),
                                    activation_, alpha_);
  pass.compute->gemm(true, false, inputs_, units_, batch, 1.0f, x, inputs_, dy, units_, 0.0f,
                     pass.grads, units_);
  pass.compute->bias_gradient(dy, pass.grads + kernel_size, pass.batch,
                              static_cast<std::size_t>(units_), 1);
  if (dx != nullptr) {
    pass.compute->gemm(false, true, batch, inputs_, units_, 1.0f, dy, units_, pass.params, units_,
                       0.0f, dx, inputs_);
  }
}

}  // namespace gradshare::nn
