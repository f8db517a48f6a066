// sharing/protocol.cpp: SharingDone's wire form.
#include "train/sharing/protocol.h"

namespace gradshare::train {

void SharingDone::write(comm::ByteWriter& writer) const {
  writer.put(last_seq).put(conservation_error).put(peak_bytes);
}

SharingDone SharingDone::read(comm::ByteReader& reader) {
  return {reader.get<std::uint64_t>(), reader.get<double>(), reader.get<std::int64_t>()};
}

}  // namespace gradshare::train
