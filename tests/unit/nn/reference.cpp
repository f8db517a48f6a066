// reference.cpp: naive double-precision layers (direct loops, no im2col, no BLAS).
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nn/layer_factory.h"

namespace gradshare::nn::testing {
namespace {

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

Vec dense(const Shape& input, std::size_t batch, const Vec& x, const Vec& p,
          const config::LayerSpec& spec) {
  const std::size_t in = element_count(input), out = sz(spec.units);
  const Activation act = parse_activation(spec.activation, "test");
  Vec y(batch * out);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t o = 0; o < out; ++o) {
      double z = p[in * out + o];
      for (std::size_t i = 0; i < in; ++i) z += x[b * in + i] * p[i * out + o];
      y[b * out + o] = ref_activation(z, act, spec.alpha);
    }
  return y;
}

Vec conv(const Shape& input, std::size_t batch, const Vec& x, const Vec& p,
         const config::LayerSpec& spec) {
  const std::int64_t c_in = input[0], h = input[1], w = input[2];
  const std::int64_t k = spec.kernel, s = spec.stride, pad = spec.padding, f = spec.filters;
  const std::int64_t oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1;
  const Activation act = parse_activation(spec.activation, "test");
  const std::size_t bias = sz(f * c_in * k * k);
  Vec y(batch * sz(f * oh * ow));
  for (std::size_t b = 0; b < batch; ++b)
    for (std::int64_t fo = 0; fo < f; ++fo)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double z = p[bias + sz(fo)];
          for (std::int64_t c = 0; c < c_in; ++c)
            for (std::int64_t ky = 0; ky < k; ++ky)
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const std::int64_t iy = oy * s - pad + ky, ix = ox * s - pad + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                z += x[b * sz(c_in * h * w) + sz((c * h + iy) * w + ix)] *
                     p[sz(((fo * c_in + c) * k + ky) * k + kx)];
              }
          y[b * sz(f * oh * ow) + sz((fo * oh + oy) * ow + ox)] =
              ref_activation(z, act, spec.alpha);
        }
  return y;
}

Vec maxpool(const Shape& input, std::size_t batch, const Vec& x, const config::LayerSpec& spec) {
  const std::int64_t c_in = input[0], h = input[1], w = input[2];
  const std::int64_t pool = spec.pool, s = spec.stride == 0 ? spec.pool : spec.stride;
  const std::int64_t oh = (h - pool) / s + 1, ow = (w - pool) / s + 1;
  Vec y(batch * sz(c_in * oh * ow));
  for (std::size_t b = 0; b < batch; ++b)
    for (std::int64_t c = 0; c < c_in; ++c)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double best = -INFINITY;
          for (std::int64_t dy = 0; dy < pool; ++dy)
            for (std::int64_t dx = 0; dx < pool; ++dx)
              best = std::max(
                  best, x[b * sz(c_in * h * w) + sz((c * h + oy * s + dy) * w + ox * s + dx)]);
          y[b * sz(c_in * oh * ow) + sz((c * oh + oy) * ow + ox)] = best;
        }
  return y;
}

}  // namespace

double ref_activation(double z, Activation activation, double alpha) {
  switch (activation) {
    case Activation::kNone:
      return z;
    case Activation::kRelu:
      return z > 0 ? z : 0.0;
    case Activation::kLeakyRelu:
      return z > 0 ? z : alpha * z;
    case Activation::kElu:
      return z > 0 ? z : alpha * (std::exp(z) - 1.0);
    case Activation::kTanh:
      return std::tanh(z);
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-z));
  }
  return z;
}

Vec ref_layer_forward(const config::LayerSpec& spec, const Shape& input, std::size_t batch,
                      const Vec& x, const Vec& params, const Vec& dropout_mask) {
  if (spec.type == "dense") return dense(input, batch, x, params, spec);
  if (spec.type == "conv2d") return conv(input, batch, x, params, spec);
  if (spec.type == "maxpool2d") return maxpool(input, batch, x, spec);
  if (spec.type == "flatten") return x;
  if (spec.type == "dropout") {
    Vec y = x;
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= dropout_mask.at(i);
    return y;
  }
  throw std::logic_error("no reference for " + spec.type);
}

double ref_cross_entropy(const Vec& logits, const std::vector<std::int32_t>& labels,
                         std::size_t classes) {
  double total = 0.0;
  for (std::size_t b = 0; b < labels.size(); ++b) {
    const double* row = logits.data() + b * classes;
    const double max = *std::max_element(row, row + classes);
    double sum = 0.0;
    for (std::size_t j = 0; j < classes; ++j) sum += std::exp(row[j] - max);
    total += max + std::log(sum) - row[labels[b]];
  }
  return total / static_cast<double>(labels.size());
}

double ref_model_loss(const config::ModelConfig& spec, const Vec& params, const Vec& x,
                      const std::vector<std::int32_t>& labels, std::size_t batch) {
  Shape shape = spec.input_shape;
  Vec activations = x;
  std::size_t offset = 0;
  double l2_sum = 0.0;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const auto layer = make_layer(spec.layers[i], shape, i);
    const std::size_t count = layer->parameter_count();
    const Vec own(params.begin() + static_cast<std::ptrdiff_t>(offset),
                  params.begin() + static_cast<std::ptrdiff_t>(offset + count));
    if (count > 0) {
      const std::size_t kernel = element_count(layer->parameter_blocks()[0].shape);
      for (std::size_t j = 0; j < kernel; ++j) l2_sum += own[j] * own[j];
    }
    activations = ref_layer_forward(spec.layers[i], shape, batch, activations, own);
    offset += count;
    shape = layer->output_shape();
  }
  return ref_cross_entropy(activations, labels, sz(spec.num_classes)) + 0.5 * spec.l2 * l2_sum;
}

Vec numeric_gradient(const std::function<double(const Vec&)>& f, Vec x, double h) {
  Vec grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f(x);
    x[i] = saved - h;
    const double down = f(x);
    x[i] = saved;
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

std::vector<float> to_float(const Vec& v) {
  std::vector<float> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), [](double d) { return static_cast<float>(d); });
  return out;
}

}  // namespace gradshare::nn::testing
