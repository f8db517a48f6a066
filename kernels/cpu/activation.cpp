// activation.cpp: bias + activation forward, activation derivative, bias gradient.
// Each loop is instantiated per activation so the compiler can vectorise it.
#include "kernels/cpu/activation.h"

#include <cmath>

namespace gradshare::kernels::cpu {
namespace {

template <Activation A>
inline float apply(float x, float alpha) {
  if constexpr (A == Activation::kNone) return x;
  if constexpr (A == Activation::kRelu) return x > 0.0f ? x : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return x > 0.0f ? x : alpha * x;
  if constexpr (A == Activation::kElu) return x > 0.0f ? x : alpha * std::expm1(x);
  if constexpr (A == Activation::kTanh) return std::tanh(x);
  if constexpr (A == Activation::kSigmoid) return 1.0f / (1.0f + std::exp(-x));
}

// f'(x) expressed through y = f(x).
template <Activation A>
inline float derivative(float y, float alpha) {
  if constexpr (A == Activation::kNone) return 1.0f;
  if constexpr (A == Activation::kRelu) return y > 0.0f ? 1.0f : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return y > 0.0f ? 1.0f : alpha;
  if constexpr (A == Activation::kElu) return y > 0.0f ? 1.0f : y + alpha;
  if constexpr (A == Activation::kTanh) return 1.0f - y * y;
  if constexpr (A == Activation::kSigmoid) return y * (1.0f - y);
}

// Sum with eight independent accumulators, so the loop vectorises without -ffast-math.
inline float sum(const float* x, std::size_t n) {
  float lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t j = 0; j < 8; ++j) lanes[j] += x[i + j];
  float total = 0.0f;
  for (; i < n; ++i) total += x[i];
  for (float lane : lanes) total += lane;
  return total;
}

template <Activation A>
void bias_activation_impl(float* y, const float* bias, std::size_t outer, std::size_t channels,
                          std::size_t inner, float alpha) {
  if (inner == 1) {  // dense: vectorise along the channels of a row
    for (std::size_t o = 0; o < outer; ++o) {
      float* row = y + o * channels;
      if (bias != nullptr) {
        for (std::size_t c = 0; c < channels; ++c) row[c] = apply<A>(row[c] + bias[c], alpha);
      } else {
        for (std::size_t c = 0; c < channels; ++c) row[c] = apply<A>(row[c], alpha);
      }
    }
    return;
  }
  for (std::size_t o = 0; o < outer; ++o) {  // convolution: vectorise along a feature map
    for (std::size_t c = 0; c < channels; ++c) {
      float* map = y + (o * channels + c) * inner;
      const float b = bias != nullptr ? bias[c] : 0.0f;
      for (std::size_t i = 0; i < inner; ++i) map[i] = apply<A>(map[i] + b, alpha);
    }
  }
}

template <Activation A>
void backward_impl(const float* y, float* dy, std::size_t n, float alpha) {
  for (std::size_t i = 0; i < n; ++i) dy[i] *= derivative<A>(y[i], alpha);
}

}  // namespace

void bias_activation(float* y, const float* bias, std::size_t outer, std::size_t channels,
                     std::size_t inner, Activation activation, float alpha) {
  switch (activation) {
    case Activation::kNone:
      if (bias != nullptr)
        bias_activation_impl<Activation::kNone>(y, bias, outer, channels, inner, alpha);
      return;
    case Activation::kRelu:
      return bias_activation_impl<Activation::kRelu>(y, bias, outer, channels, inner, alpha);
    case Activation::kLeakyRelu:
      return bias_activation_impl<Activation::kLeakyRelu>(y, bias, outer, channels, inner, alpha);
    case Activation::kElu:
      return bias_activation_impl<Activation::kElu>(y, bias, outer, channels, inner, alpha);
    case Activation::kTanh:
      return bias_activation_impl<Activation::kTanh>(y, bias, outer, channels, inner, alpha);
    case Activation::kSigmoid:
      return bias_activation_impl<Activation::kSigmoid>(y, bias, outer, channels, inner, alpha);
  }
}

void activation_backward(const float* y, float* dy, std::size_t n, Activation activation,
                         float alpha) {
  switch (activation) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      return backward_impl<Activation::kRelu>(y, dy, n, alpha);
    case Activation::kLeakyRelu:
      return backward_impl<Activation::kLeakyRelu>(y, dy, n, alpha);
    case Activation::kElu:
      return backward_impl<Activation::kElu>(y, dy, n, alpha);
    case Activation::kTanh:
      return backward_impl<Activation::kTanh>(y, dy, n, alpha);
    case Activation::kSigmoid:
      return backward_impl<Activation::kSigmoid>(y, dy, n, alpha);
  }
}

void bias_gradient(const float* dy, float* db, std::size_t outer, std::size_t channels,
                   std::size_t inner) {
  for (std::size_t c = 0; c < channels; ++c) db[c] = 0.0f;
  if (inner == 1) {
    for (std::size_t o = 0; o < outer; ++o) {
      const float* row = dy + o * channels;
      for (std::size_t c = 0; c < channels; ++c) db[c] += row[c];
    }
    return;
  }
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t c = 0; c < channels; ++c) {
      db[c] += sum(dy + (o * channels + c) * inner, inner);
    }
  }
}

}  // namespace gradshare::kernels::cpu
