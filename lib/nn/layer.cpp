// layer.cpp: shape helpers and the parameter count of a layer.
#include "nn/layer.h"

namespace gradshare::nn {

std::size_t element_count(const Shape& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::string shape_string(const Shape& shape) {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

std::size_t Layer::parameter_count() const {
  std::size_t n = 0;
  for (const ParameterBlock& block : parameter_blocks()) n += element_count(block.shape);
  return n;
}

}  // namespace gradshare::nn
