#include "train/normalization_message.h"

#include <cmath>

#include "comm/byte_io.h"
#include "core/errors.h"

namespace gradshare::train {

std::vector<std::uint8_t> serialize(const data::Normalization& normalization) {
  return comm::ByteWriter().put(normalization.offset).put(normalization.scale).take();
}

data::Normalization parse_normalization(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "normalisation");
  data::Normalization normalization;
  normalization.offset = reader.get<float>();
  normalization.scale = reader.get<float>();
  reader.expect_end();
  if (!std::isfinite(normalization.offset) || !std::isfinite(normalization.scale))
    throw core::RuntimeError("normalisation: not finite");
  return normalization;
}

}  // namespace gradshare::train
