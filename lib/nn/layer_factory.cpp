// layer_factory.cpp: validation of layer entries against their input shapes.
#include "nn/layer_factory.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>

#include "core/errors.h"
#include "nn/conv2d.h"
#include "nn/dense.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/maxpool2d.h"

namespace gradshare::nn {
namespace {

constexpr std::array<std::pair<const char*, Activation>, 6> kActivations = {{
    {"none", Activation::kNone},
    {"relu", Activation::kRelu},
    {"leaky_relu", Activation::kLeakyRelu},
    {"elu", Activation::kElu},
    {"tanh", Activation::kTanh},
    {"sigmoid", Activation::kSigmoid},
}};

// BLAS takes int dimensions, so every per-sample size must fit one.
constexpr std::int64_t kMaxElements = std::numeric_limits<int>::max();

// Product of sizes, saturating at the int64 maximum instead of overflowing.
std::int64_t product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (std::int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::numeric_limits<std::int64_t>::max();
  return out;
}

class LayerChecker {
 public:
  LayerChecker(const config::LayerSpec& spec, std::size_t index)
      : where_(layer_location(spec, index)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw core::UserError(where_ + ": " + message);
  }
  void require(bool ok, const std::string& message) const {
    if (!ok) fail(message);
  }
  // `key` (the layer's field) must be at least `least`.
  void require_at_least(std::int64_t value, std::int64_t least, const char* key) const {
    require(value >= least, std::string(key) + " must be >= " + std::to_string(least) + ", got " +
                                std::to_string(value));
  }
  void require_image(const Shape& input) const {
    require(input.size() == 3, "needs a [channels, height, width] input, got [" +
                                   shape_string(input) +
                                   "] (set model.input_shape to 3 values, or remove the flatten)");
  }
  void check_size(std::int64_t count, const char* what) const {
    require(count <= kMaxElements, std::string(what) + " " + std::to_string(count) +
                                       " exceeds the supported " + std::to_string(kMaxElements));
  }
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

std::unique_ptr<Layer> make_dense(const config::LayerSpec& spec, const Shape& input,
                                  const LayerChecker& check) {
  check.require_at_least(spec.units, 1, "units");
  const auto inputs = static_cast<std::int64_t>(element_count(input));
  check.check_size(spec.units, "units");
  check.check_size(product({inputs, spec.units}), "kernel size");
  return std::make_unique<Dense>(input, spec.units,
                                 parse_activation(spec.activation, check.where()),
                                 static_cast<float>(spec.alpha));
}

std::unique_ptr<Layer> make_conv2d(const config::LayerSpec& spec, const Shape& input,
                                   const LayerChecker& check) {
  check.require_image(input);
  check.require_at_least(spec.filters, 1, "filters");
  check.require_at_least(spec.kernel, 1, "kernel");
  check.require_at_least(spec.stride, 1, "stride");
  check.require_at_least(spec.padding, 0, "padding");
  const std::int64_t height = input[1] + 2 * spec.padding, width = input[2] + 2 * spec.padding;
  if (spec.kernel > height || spec.kernel > width) {
    check.fail("kernel " + std::to_string(spec.kernel) + " larger than " +
               (spec.padding > 0 ? "padded input " : "input ") + std::to_string(height) + "x" +
               std::to_string(width));
  }
  check.check_size(spec.filters, "filters");
  check.check_size(product({input[0], spec.kernel, spec.kernel, spec.filters}), "kernel size");
  const std::int64_t out_h = (height - spec.kernel) / spec.stride + 1;
  const std::int64_t out_w = (width - spec.kernel) / spec.stride + 1;
  check.check_size(product({input[0], spec.kernel, spec.kernel, out_h, out_w}), "im2col size");
  check.check_size(product({spec.filters, out_h, out_w}), "output size");
  return std::make_unique<Conv2D>(input, spec.filters, spec.kernel, spec.stride, spec.padding,
                                  parse_activation(spec.activation, check.where()),
                                  static_cast<float>(spec.alpha));
}

std::unique_ptr<Layer> make_maxpool2d(const config::LayerSpec& spec, const Shape& input,
                                      const LayerChecker& check) {
  check.require_image(input);
  check.require_at_least(spec.pool, 1, "pool");
  check.require_at_least(spec.stride, 0, "stride");
  if (spec.pool > input[1] || spec.pool > input[2]) {
    check.fail("pool " + std::to_string(spec.pool) + " larger than input " +
               std::to_string(input[1]) + "x" + std::to_string(input[2]));
  }
  return std::make_unique<MaxPool2D>(input, spec.pool, spec.stride == 0 ? spec.pool : spec.stride);
}

}  // namespace

Activation parse_activation(const std::string& name, const std::string& where) {
  for (const auto& [text, activation] : kActivations)
    if (name == text) return activation;
  std::string choices;
  for (const auto& entry : kActivations)
    choices += std::string(choices.empty() ? "" : ", ") + entry.first;
  throw core::UserError(where + ": unknown activation '" + name + "' (one of " + choices + ")");
}

const char* activation_name(Activation activation) {
  for (const auto& [text, value] : kActivations)
    if (value == activation) return text;
  return "?";
}

std::string layer_location(const config::LayerSpec& spec, std::size_t index) {
  std::string out = "model.layers[" + std::to_string(index) + "] (" + spec.type;
  if (spec.line > 0) out += ", line " + std::to_string(spec.line);
  return out + ")";
}

std::unique_ptr<Layer> make_layer(const config::LayerSpec& spec, const Shape& input,
                                  std::size_t index) {
  const LayerChecker check(spec, index);
  const bool has_activation = spec.type == "dense" || spec.type == "conv2d";
  if (!has_activation && spec.activation != "none")
    check.fail("a " + spec.type + " layer takes no activation (only dense and conv2d do)");
  if (has_activation && spec.alpha < 0.0)
    check.fail("alpha must be >= 0, got " + std::to_string(spec.alpha));

  if (spec.type == "dense") return make_dense(spec, input, check);
  if (spec.type == "conv2d") return make_conv2d(spec, input, check);
  if (spec.type == "maxpool2d") return make_maxpool2d(spec, input, check);
  if (spec.type == "flatten") return std::make_unique<Flatten>(input);
  if (spec.type == "dropout") {
    check.require(spec.rate >= 0.0 && spec.rate < 1.0,
                  "rate must be in [0, 1), got " + std::to_string(spec.rate));
    return std::make_unique<Dropout>(input, spec.rate);
  }
  check.fail("unknown layer type '" + spec.type +
             "' (one of dense, conv2d, maxpool2d, flatten, dropout)");
}

}  // namespace gradshare::nn
