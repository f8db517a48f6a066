// flatten.h: reshapes a sample to one row. The data is already contiguous, so the layer only
// changes the recorded shape and the Model passes its buffer straight through.
#pragma once

#include "nn/layer.h"

namespace gradshare::nn {

class Flatten final : public Layer {
 public:
  explicit Flatten(Shape input)
      : Layer(input, Shape{static_cast<std::int64_t>(element_count(input))}) {}
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Flatten>(*this); }

  std::string_view type() const override { return "flatten"; }
  bool passes_through(bool) const override { return true; }
  void forward(const Pass&, const float*, float*) override {}
  void backward(const Pass&, const float*, const float*, float*, float*) override {}
};

}  // namespace gradshare::nn
