// dropout.cpp: one 64-bit draw from the pass's Rng seeds the whole batch's mask, which the
// backend derives per element (see kernels/cpu/elementwise.h), so masks are reproducible from
// the run's seed on any backend.
#include "nn/dropout.h"

namespace gradshare::nn {

void Dropout::forward(const Pass& pass, const float* x, float* y) {
  const std::size_t n = pass.batch * output_size();
  pass.compute->dropout_forward(x, y, mask_.get(n, *pass.compute), n, rate_, pass.rng->next());
}

void Dropout::backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) {
  if (dx == nullptr) return;
  const std::size_t n = pass.batch * output_size();
  pass.compute->multiply(dy, mask_.get(n, *pass.compute), dx, n);
}

}  // namespace gradshare::nn
