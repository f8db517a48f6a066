// elementwise.h: the element-wise loops of training: scaled adds (L2 decay), applying an update,
// inverted dropout, and every optimizer's update rule over flat state vectors.
// Optimizer rules write the update u that the caller applies as params -= u.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cpu {

// y += alpha * x
void axpy(float alpha, const float* x, float* y, std::size_t n);

// The L2 norm and the largest |x[i]| of x (accumulated in double).
struct NormStats {
  double l2 = 0;
  double max_abs = 0;
};
NormStats norm_stats(const float* x, std::size_t n);

// params -= update
void subtract(float* params, const float* update, std::size_t n);

// out = a - b (the same bits as copying a and subtracting b, in one pass)
void difference(const float* a, const float* b, float* out, std::size_t n);

// out = a * b
void multiply(const float* a, const float* b, float* out, std::size_t n);

// out = alpha * x
void scale(float alpha, const float* x, float* out, std::size_t n);

// x /= divisor, element by element (a division: the same bits as x[i] / divisor, which a
// multiplication by 1 / divisor does not always give)
void divide(float* x, float divisor, std::size_t n);

// Inverted dropout: element i is kept with probability 1 - rate (mask = 1 / (1 - rate)) or
// dropped (mask = 0); y = x * mask. The decision for element i is a hash of (seed, i), so any
// backend reproduces the same mask from the same seed.
void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                     std::uint64_t seed);

// u = lr * g
void sgd_update(const float* g, float* u, std::size_t n, float lr);

// v = momentum * v + g;  u = lr * v  (classic)  or  u = lr * (g + momentum * v)  (Nesterov)
void momentum_update(const float* g, float* velocity, float* u, std::size_t n, float lr,
                     float momentum, bool nesterov);

// Adam (and AdamW when weight_decay > 0, which needs params):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   u = step_size * m / (sqrt(v) * inv_sqrt_bias2 + eps) + lr * weight_decay * p
// where step_size = lr / (1 - b1^t) and inv_sqrt_bias2 = 1 / sqrt(1 - b2^t).
// The caller computes 1 - beta in double: in float, 1 - 0.999f is off by 1.3e-5 relative.
struct AdamStep {
  float beta1, beta2, epsilon;
  float one_minus_beta1, one_minus_beta2;
  float step_size, inv_sqrt_bias2;
  float decoupled_decay;  // lr * weight_decay (0 for plain Adam)
};
void adam_update(const float* g, const float* params, float* m, float* v, float* u, std::size_t n,
                 const AdamStep& step);

// s = decay * s + one_minus_decay * g^2;  u = lr * g / (sqrt(s) + eps)
void rmsprop_update(const float* g, float* s, float* u, std::size_t n, float lr, float decay,
                    float one_minus_decay, float epsilon);

// s += g^2;  u = lr * g / (sqrt(s) + eps)
void adagrad_update(const float* g, float* s, float* u, std::size_t n, float lr, float epsilon);

}  // namespace gradshare::kernels::cpu
