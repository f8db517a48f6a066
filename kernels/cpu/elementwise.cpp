// elementwise.cpp: element-wise training loops (see elementwise.h).
#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace gradshare::kernels::cpu {
namespace {

// splitmix64 finaliser: a counter-based hash, cheap on CPU and GPU alike.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

#if defined(__SSE2__)
using Vec = __m128;
constexpr std::size_t kLanes = 4;
inline Vec load(const float* p) { return _mm_loadu_ps(p); }
inline void store(float* p, Vec x) { _mm_storeu_ps(p, x); }
inline Vec splat(float x) { return _mm_set1_ps(x); }
inline Vec add(Vec a, Vec b) { return _mm_add_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm_mul_ps(a, b); }
inline Vec div(Vec a, Vec b) { return _mm_div_ps(a, b); }
inline Vec root(Vec a) { return _mm_sqrt_ps(a); }
#endif

// The adaptive rules below need sqrt, which GCC does not vectorise while sqrt may set errno
// (-fmath-errno is the default); their main loops therefore use SSE directly.
// Each returns the first index its vector loop did not handle.

#if defined(__SSE2__) && defined(__x86_64__)
// The Adam loop 8 lanes wide for CPUs with AVX, chosen at run time (the build targets plain
// x86-64). Adam is the default optimizer and this loop a fifth of an MLP step. Same operations
// in the same order as the SSE loop, so the results are identical bit for bit.
__attribute__((target("avx"))) std::size_t adam_avx(const float* g, float* m, float* v, float* u,
                                                    std::size_t n, const AdamStep& step) {
  const __m256 b1 = _mm256_set1_ps(step.beta1), b2 = _mm256_set1_ps(step.beta2);
  const __m256 c1 = _mm256_set1_ps(step.one_minus_beta1);
  const __m256 c2 = _mm256_set1_ps(step.one_minus_beta2);
  const __m256 size = _mm256_set1_ps(step.step_size);
  const __m256 scale = _mm256_set1_ps(step.inv_sqrt_bias2);
  const __m256 eps = _mm256_set1_ps(step.epsilon);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(c2, _mm256_mul_ps(gi, gi)));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(u + i,
                     _mm256_div_ps(_mm256_mul_ps(size, mi),
                                   _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), scale), eps)));
  }
  return i;
}

bool cpu_has_avx() {
  static const bool has = __builtin_cpu_supports("avx");
  return has;
}
#endif

std::size_t adam_vector(const float* g, float* m, float* v, float* u, std::size_t n,
                        const AdamStep& step) {
  std::size_t i = 0;
#if defined(__SSE2__) && defined(__x86_64__)
  if (cpu_has_avx()) i = adam_avx(g, m, v, u, n, step);
#endif
#if defined(__SSE2__)
  const Vec b1 = splat(step.beta1), b2 = splat(step.beta2);
  const Vec c1 = splat(step.one_minus_beta1), c2 = splat(step.one_minus_beta2);
  const Vec size = splat(step.step_size), scale = splat(step.inv_sqrt_bias2);
  const Vec eps = splat(step.epsilon);
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gi = load(g + i);
    const Vec mi = add(mul(b1, load(m + i)), mul(c1, gi));
    const Vec vi = add(mul(b2, load(v + i)), mul(c2, mul(gi, gi)));
    store(m + i, mi);
    store(v + i, vi);
    store(u + i, div(mul(size, mi), add(mul(root(vi), scale), eps)));
  }
#endif
  return i;
}

// s = decay * s + (1 - decay) g^2 (rmsprop) or s += g^2 (adagrad: decay = 1, fresh = 1);
// u = lr * g / (sqrt(s) + eps)
std::size_t root_scaled_vector(const float* g, float* s, float* u, std::size_t n, float lr,
                               float decay, float fresh, float epsilon) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const Vec d = splat(decay), c = splat(fresh), rate = splat(lr), eps = splat(epsilon);
  for (; i + kLanes <= n; i += kLanes) {
    const Vec gi = load(g + i);
    const Vec si = add(mul(d, load(s + i)), mul(c, mul(gi, gi)));
    store(s + i, si);
    store(u + i, div(mul(rate, gi), add(root(si), eps)));
  }
#endif
  return i;
}

}  // namespace

NormStats norm_stats(const float* x, std::size_t n) {
  double squares = 0;
  double max_abs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double value = x[i];
    squares += value * value;
    max_abs = std::max(max_abs, std::abs(value));
  }
  return {std::sqrt(squares), max_abs};
}

void axpy(float alpha, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void subtract(float* params, const float* update, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) params[i] -= update[i];
}

void difference(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}

void multiply(const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

void scale(float alpha, const float* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = alpha * x[i];
}

void divide(float* x, float divisor, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] /= divisor;
}

void dropout_forward(const float* x, float* y, float* mask, std::size_t n, float rate,
                     std::uint64_t seed) {
  // Keep when the top 24 bits of the hash, as a fraction of 2^24, are >= rate.
  const auto threshold = static_cast<std::uint64_t>(static_cast<double>(rate) * 16777216.0);
  const float keep_scale = 1.0f / (1.0f - rate);
  for (std::size_t i = 0; i < n; ++i) {
    const bool keep = (mix(seed ^ (i * 0xd6e8feb86659fd93ULL)) >> 40) >= threshold;
    mask[i] = keep ? keep_scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

void sgd_update(const float* g, float* u, std::size_t n, float lr) {
  for (std::size_t i = 0; i < n; ++i) u[i] = lr * g[i];
}

void momentum_update(const float* g, float* velocity, float* u, std::size_t n, float lr,
                     float momentum, bool nesterov) {
  if (nesterov) {
    for (std::size_t i = 0; i < n; ++i) {
      velocity[i] = momentum * velocity[i] + g[i];
      u[i] = lr * (g[i] + momentum * velocity[i]);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      velocity[i] = momentum * velocity[i] + g[i];
      u[i] = lr * velocity[i];
    }
  }
}

void adam_update(const float* g, const float* params, float* m, float* v, float* u, std::size_t n,
                 const AdamStep& step) {
  const float b1 = step.beta1, b2 = step.beta2;
  const float c1 = step.one_minus_beta1, c2 = step.one_minus_beta2;
  for (std::size_t i = adam_vector(g, m, v, u, n, step); i < n; ++i) {
    m[i] = b1 * m[i] + c1 * g[i];
    v[i] = b2 * v[i] + c2 * (g[i] * g[i]);
    u[i] = step.step_size * m[i] / (std::sqrt(v[i]) * step.inv_sqrt_bias2 + step.epsilon);
  }
  if (step.decoupled_decay != 0.0f) axpy(step.decoupled_decay, params, u, n);
}

void rmsprop_update(const float* g, float* s, float* u, std::size_t n, float lr, float decay,
                    float one_minus_decay, float epsilon) {
  const float c = one_minus_decay;
  for (std::size_t i = root_scaled_vector(g, s, u, n, lr, decay, c, epsilon); i < n; ++i) {
    s[i] = decay * s[i] + c * (g[i] * g[i]);
    u[i] = lr * g[i] / (std::sqrt(s[i]) + epsilon);
  }
}

void adagrad_update(const float* g, float* s, float* u, std::size_t n, float lr, float epsilon) {
  for (std::size_t i = root_scaled_vector(g, s, u, n, lr, 1.0f, 1.0f, epsilon); i < n; ++i) {
    s[i] += g[i] * g[i];
    u[i] = lr * g[i] / (std::sqrt(s[i]) + epsilon);
  }
}

}  // namespace gradshare::kernels::cpu
