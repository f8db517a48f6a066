// softmax.cpp: softmax cross-entropy. Each row is shifted by its maximum before exp, so the
// exponentials never overflow and the log-sum-exp stays exact for large logits.
#include "kernels/cpu/softmax.h"

#include <cmath>

namespace gradshare::kernels::cpu {

LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                               std::size_t classes, float grad_scale, float* dlogits,
                               std::int32_t* predicted) {
  LossSums sums;
  for (std::size_t b = 0; b < batch; ++b) {
    const float* row = logits + b * classes;
    std::size_t best = 0;
    for (std::size_t j = 1; j < classes; ++j)
      if (row[j] > row[best]) best = j;
    if (predicted != nullptr) predicted[b] = static_cast<std::int32_t>(best);
    if (labels == nullptr) continue;

    const float max = row[best];
    double total = 0.0;
    for (std::size_t j = 0; j < classes; ++j) total += std::exp(static_cast<double>(row[j] - max));
    const auto label = static_cast<std::size_t>(labels[b]);
    sums.loss_sum += std::log(total) - static_cast<double>(row[label] - max);
    if (best == label) ++sums.correct;

    if (dlogits != nullptr) {
      float* grad = dlogits + b * classes;
      const double scale = grad_scale / total;
      for (std::size_t j = 0; j < classes; ++j)
        grad[j] = static_cast<float>(std::exp(static_cast<double>(row[j] - max)) * scale);
      grad[label] -= grad_scale;
    }
  }
  return sums;
}

}  // namespace gradshare::kernels::cpu
