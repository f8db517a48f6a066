// sharing/protocol.cpp: the wire form of SharingDone and StateChunk.
#include "train/sharing/protocol.h"

#include <algorithm>

namespace gradshare::train {

std::size_t state_piece_bytes(std::size_t state_bytes, bool across_network) {
  if (!across_network) return std::max<std::size_t>(1, state_bytes);
  return std::max<std::size_t>(std::size_t{16} << 10, (state_bytes + 255) / 256);
}

}  // namespace gradshare::train
