// layer_factory.h: builds one layer from its model.layers entry, checking it against the shape
// it receives. Mistakes are UserErrors naming the entry, e.g.
//   "model.layers[2] (conv2d, line 14): kernel 5 larger than padded input 4x4"
#pragma once

#include <memory>
#include <string>

#include "config/experiment_config.h"
#include "nn/layer.h"

namespace gradshare::nn {

// "relu" -> Activation::kRelu, ..., "none" -> kNone; an unknown name throws UserError
// prefixed with `where`.
Activation parse_activation(const std::string& name, const std::string& where);
const char* activation_name(Activation activation);

// "model.layers[2] (conv2d, line 14)" (the line part only when known).
std::string layer_location(const config::LayerSpec& spec, std::size_t index);

std::unique_ptr<Layer> make_layer(const config::LayerSpec& spec, const Shape& input,
                                  std::size_t index);

}  // namespace gradshare::nn
