// activation.h: element-wise activations fused with the bias add, their derivatives, and the
// bias gradient. Layouts are [outer][channels][inner]: a dense output is [batch][units][1], a
// NCHW convolution output is [batch][filters][height*width].
#pragma once

#include <cstddef>

namespace gradshare::kernels::cpu {

enum class Activation { kNone, kRelu, kLeakyRelu, kElu, kTanh, kSigmoid };

// y = f(y + bias[c]) in place; bias may be null (no bias). alpha: leaky_relu slope, elu alpha.
void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                     std::size_t inner, Activation activation, float alpha);

// dy *= f'(x), with the derivative computed from the activation's OUTPUT y (every supported
// activation allows this for alpha >= 0), so the pre-activation never has to be stored.
void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                         float alpha);

// db[c] = sum over outer and inner of dy[o][c][i] (overwrites db).
void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                   std::size_t inner);

}  // namespace gradshare::kernels::cpu
