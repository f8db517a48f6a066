// sharing/protocol.cpp: the wire form of SharingDone and StateChunk.
#include "train/sharing/protocol.h"

#include <algorithm>

namespace gradshare::train {

void SharingDone::write(comm::ByteWriter& writer) const {
  writer.put(last_seq).put(conservation_error).put(peak_bytes);
}

SharingDone SharingDone::read(comm::ByteReader& reader) {
  return {reader.get<std::uint64_t>(), reader.get<double>(), reader.get<std::int64_t>()};
}

std::size_t state_piece_bytes(std::size_t state_bytes, bool across_network) {
  if (!across_network) return std::max<std::size_t>(1, state_bytes);
  return std::max<std::size_t>(std::size_t{16} << 10, (state_bytes + 255) / 256);
}

void StateChunk::write(comm::ByteWriter& writer) const {
  writer.put(checkpoint).put(sent_seq).put(index).put(count).put_vector(bytes);
}

StateChunk StateChunk::read(comm::ByteReader& reader) {
  StateChunk chunk;
  chunk.checkpoint = reader.get<std::uint64_t>();
  chunk.sent_seq = reader.get<std::uint64_t>();
  chunk.index = reader.get<std::uint32_t>();
  chunk.count = reader.get<std::uint32_t>();
  chunk.bytes = reader.get_vector<std::uint8_t>();
  return chunk;
}

}  // namespace gradshare::train
