// allreduce/protocol.cpp: the all-reduce strategy's payloads' wire forms.
#include "train/allreduce/protocol.h"

namespace gradshare::train {

void AllreduceProgress::write(comm::ByteWriter& writer) const {
  writer.put(step).put(loss).put(accuracy).put(samples_per_second).put(learning_rate);
  writer.put_string(line);
}

AllreduceProgress AllreduceProgress::read(comm::ByteReader& reader) {
  AllreduceProgress progress;
  progress.step = reader.get<std::int64_t>();
  progress.loss = reader.get<double>();
  progress.accuracy = reader.get<double>();
  progress.samples_per_second = reader.get<double>();
  progress.learning_rate = reader.get<double>();
  progress.line = reader.get_string();
  return progress;
}

void AllreduceSnapshot::write(comm::ByteWriter& writer) const {
  writer.put(step).put_vector(parameters);
  state.write(writer);
}

AllreduceSnapshot AllreduceSnapshot::read(comm::ByteReader& reader) {
  AllreduceSnapshot snapshot;
  snapshot.step = reader.get<std::int64_t>();
  snapshot.parameters = reader.get_vector<float>();
  snapshot.state = WorkerState::read(reader);
  return snapshot;
}

void AllreduceFinal::write(comm::ByteWriter& writer) const {
  writer.put(stopped).put(step).put_vector(parameters).put(peak_bytes);
}

AllreduceFinal AllreduceFinal::read(comm::ByteReader& reader) {
  AllreduceFinal final_model;
  final_model.stopped = reader.get<bool>();
  final_model.step = reader.get<std::int64_t>();
  final_model.parameters = reader.get_vector<float>();
  final_model.peak_bytes = reader.get<std::int64_t>();
  return final_model;
}

}  // namespace gradshare::train
