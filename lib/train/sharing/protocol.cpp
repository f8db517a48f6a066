// sharing/protocol.cpp: SharingDone's wire form.
#include "train/sharing/protocol.h"

namespace gradshare::train {

void SharingDone::write(comm::ByteWriter& writer) const {
  writer.put(last_seq).put(conservation_error).put(peak_bytes);
}

SharingDone SharingDone::read(comm::ByteReader& reader) {
  SharingDone done;
  done.last_seq = reader.get<std::uint64_t>();
  done.conservation_error = reader.get<double>();
  done.peak_bytes = reader.get<std::int64_t>();
  return done;
}

}  // namespace gradshare::train
