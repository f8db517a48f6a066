// momentum_mask.h: momentum factor masking (Deep Gradient Compression, Lin et al. 2018), for
// encoding.momentum: mask. After each message the optimizer's momentum (SGD velocity, Adam's
// first moment m) of every element the message carried is cleared: what those elements had
// accumulated left with the message, and their momentum would go on pushing them in the
// direction just sent. Elements still in the residual keep theirs. An optimizer without a
// momentum buffer (RMSprop, Adagrad, plain SGD) is left alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/optimizer.h"

namespace gradshare::train {

class MomentumMask {
 public:
  explicit MomentumMask(std::size_t parameter_count) : sent_(parameter_count) {}

  // Clears `optimizer`'s momentum where `message` (an encoded update, codec/message.h) has a
  // quantum; returns how many elements it cleared.
  std::size_t after_message(std::span<const std::uint8_t> message, nn::Optimizer& optimizer);

 private:
  std::vector<float> sent_;  // the message decoded, reused
};

}  // namespace gradshare::train
