// momentum_mask.cpp: MomentumMask (see momentum_mask.h).
#include "train/sharing/momentum_mask.h"

#include <algorithm>
#include <string>

#include "codec/decoder.h"
#include "core/errors.h"

namespace gradshare::train {

std::size_t MomentumMask::after_message(std::span<const std::uint8_t> message,
                                        nn::Optimizer& optimizer) {
  std::span<float> momentum;
  for (const auto& buffer : optimizer.state())
    if (buffer.name == "velocity" || buffer.name == "m") momentum = buffer.values;
  if (momentum.empty()) return 0;
  GS_CHECK(momentum.size() == sent_.size(), "the momentum buffer does not match the model");
  std::fill(sent_.begin(), sent_.end(), 0.0f);
  std::string error;
  GS_CHECK(codec::accumulate_message(message, sent_, &error), error);
  std::size_t cleared = 0;
  for (std::size_t i = 0; i < sent_.size(); ++i)
    if (sent_[i] != 0.0f) {
      momentum[i] = 0.0f;
      ++cleared;
    }
  return cleared;
}

}  // namespace gradshare::train
