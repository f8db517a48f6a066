// softmax.h: numerically stable softmax + cross-entropy over a batch of logits, its gradient
// and the predicted classes, in one pass.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cpu {

struct LossSums {
  double loss_sum = 0.0;     // sum over the batch of -log softmax(logits)[label]
  std::int64_t correct = 0;  // samples whose arg-max equals the label
};

// logits: [batch][classes]. labels may be null (then loss_sum and correct stay 0 and no
// gradient is written); labels must lie in [0, classes).
// dlogits (nullable): (softmax - one_hot(label)) * grad_scale; may alias nothing else.
// predicted (nullable): arg-max per sample (the first one on ties).
LossSums softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                               std::size_t classes, float grad_scale, float* dlogits,
                               std::int32_t* predicted);

}  // namespace gradshare::kernels::cpu
