// messages.cpp: the shared payloads' wire forms.
#include "train/messages.h"

#include "core/errors.h"

namespace gradshare::train {

void wrong_tag(const comm::ControlMessage& message, comm::Tag expected) {
  throw core::RuntimeError(std::string("expected a ") + tag_name(expected) +
                           " message from rank " + std::to_string(message.source) + ", got a " +
                           tag_name(message.tag));
}

void Shutdown::write(comm::ByteWriter& writer) const { writer.put(exit_code); }
Shutdown Shutdown::read(comm::ByteReader& reader) { return {reader.get<std::int32_t>()}; }

void Diverged::write(comm::ByteWriter& writer) const { writer.put(step).put_string(reason); }
Diverged Diverged::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>(), reader.get_string()};
}

void PeakMemoryReport::write(comm::ByteWriter& writer) const { writer.put(bytes); }
PeakMemoryReport PeakMemoryReport::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>()};
}

void EpochModel::write(comm::ByteWriter& writer) const {
  writer.put(epoch).put(step).put(minibatches).put_vector(parameters);
}
EpochModel EpochModel::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>(), reader.get<std::int64_t>(), reader.get<std::int64_t>(),
          reader.get_vector<float>()};
}

}  // namespace gradshare::train
