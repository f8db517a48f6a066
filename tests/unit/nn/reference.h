// reference.h: straightforward double-precision implementations of every layer, the loss and
// a whole model, used as the ground truth for finite-difference gradient checks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "config/experiment_config.h"
#include "nn/layer.h"

namespace gradshare::nn::testing {

using Vec = std::vector<double>;

double ref_activation(double z, Activation activation, double alpha);

// Forward of one layer over a batch. params: the layer's parameters in its block order.
// dropout_mask (dropout only): the multiplier of each activation, taken from the float pass.
Vec ref_layer_forward(const config::LayerSpec& spec, const Shape& input, std::size_t batch,
                      const Vec& x, const Vec& params, const Vec& dropout_mask = {});

// Mean softmax cross-entropy over [batch][classes].
double ref_cross_entropy(const Vec& logits, const std::vector<std::int32_t>& labels,
                         std::size_t classes);

// Whole-model loss: mean cross-entropy + (l2 / 2) * sum of squared kernel weights, i.e. the
// function whose gradient Model::train_batch reports. No dropout layers.
double ref_model_loss(const config::ModelConfig& spec, const Vec& params, const Vec& x,
                      const std::vector<std::int32_t>& labels, std::size_t batch);

// Central finite differences of f with respect to every element of x (x is restored).
Vec numeric_gradient(const std::function<double(const Vec&)>& f, Vec x, double h = 1e-6);

Vec to_double(const std::vector<float>& v);
std::vector<float> to_float(const Vec& v);

}  // namespace gradshare::nn::testing
