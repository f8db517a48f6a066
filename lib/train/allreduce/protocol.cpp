// allreduce/protocol.cpp: the all-reduce strategy's payloads' wire forms.
#include "train/allreduce/protocol.h"

namespace gradshare::train {

void AllreduceProgress::write(comm::ByteWriter& writer) const {
  writer.put(step).put(loss).put(accuracy).put(samples_per_second).put(learning_rate);
  writer.put_string(line);
}

AllreduceProgress AllreduceProgress::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>(), reader.get<double>(), reader.get<double>(), reader.get<double>(), reader.get<double>(), reader.get_string()};
}

void AllreduceSnapshot::write(comm::ByteWriter& writer) const {
  writer.put(step).put(iteration).put_vector(parameters);
  state.write(writer);
}

AllreduceSnapshot AllreduceSnapshot::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>(), reader.get<std::int64_t>(), reader.get_vector<float>(),
          WorkerState::read(reader)};
}

void AllreduceFinal::write(comm::ByteWriter& writer) const {
  writer.put(stopped).put(iteration).put(minibatches).put_vector(parameters).put(peak_bytes);
}

AllreduceFinal AllreduceFinal::read(comm::ByteReader& reader) {
  return {reader.get<bool>(), reader.get<std::int64_t>(), reader.get<std::int64_t>(),
          reader.get_vector<float>(), reader.get<std::int64_t>()};
}

}  // namespace gradshare::train
