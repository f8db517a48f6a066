// normalization_message.h: the training set's normalisation as the master sends it to ranks
// that do not fit it themselves (start-up with partitioned reading, a replacement worker):
//   {offset: f32, scale: f32}
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/dataset.h"

namespace gradshare::train {

std::vector<std::uint8_t> serialize(const data::Normalization& normalization);
// Throws RuntimeError when malformed or not finite.
data::Normalization parse_normalization(std::span<const std::uint8_t> bytes);

}  // namespace gradshare::train
