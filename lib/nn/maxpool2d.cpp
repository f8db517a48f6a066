// maxpool2d.cpp: forward records the position of every maximum; backward routes each output
// gradient back to that position.
#include "nn/maxpool2d.h"

namespace gradshare::nn {

MaxPool2D::MaxPool2D(Shape input, std::int64_t pool, std::int64_t stride)
    : Layer(input,
            Shape{input[0], (input[1] - pool) / stride + 1, (input[2] - pool) / stride + 1}) {
  geometry_.height = static_cast<int>(input[1]);
  geometry_.width = static_cast<int>(input[2]);
  geometry_.pool = static_cast<int>(pool);
  geometry_.stride = static_cast<int>(stride);
}

void MaxPool2D::forward(const Pass& pass, const float* x, float* y) {
  const std::size_t planes = pass.batch * static_cast<std::size_t>(input_shape()[0]);
  std::int32_t* argmax = pass.training ? argmax_.get(pass.batch * output_size(), *pass.compute) : nullptr;
  pass.compute->maxpool_forward(x, geometry_, planes, y, argmax);
}

void MaxPool2D::backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) {
  if (dx == nullptr) return;
  const std::size_t planes = pass.batch * static_cast<std::size_t>(input_shape()[0]);
  pass.compute->maxpool_backward(dy, argmax_.get(pass.batch * output_size(), *pass.compute), geometry_, planes,
                                 dx);
}

}  // namespace gradshare::nn
