// averaging/protocol.cpp: parameter averaging's payloads' wire forms.
#include "train/averaging/protocol.h"

namespace gradshare::train {

void AveragingReport::add(const AveragingReport& o) {
  steps += o.steps;
  samples += o.samples;
  loss_sum += o.loss_sum;
  correct += o.correct;
  rounds += o.rounds;
  bytes += o.bytes;
  wait_sum += o.wait_sum;
  wait_max = std::max(wait_max, o.wait_max);
  seconds += o.seconds;
}

void AveragingSnapshot::write(comm::ByteWriter& writer) const {
  writer.put(stop).put(iteration).put_vector(parameters);
  state.write(writer);
}

AveragingSnapshot AveragingSnapshot::read(comm::ByteReader& reader) {
  AveragingSnapshot snapshot;
  snapshot.stop = reader.get<bool>();
  snapshot.iteration = reader.get<std::int64_t>();
  snapshot.parameters = reader.get_vector<float>();
  snapshot.state = WorkerState::read(reader);
  return snapshot;
}

void AveragingDone::write(comm::ByteWriter& writer) const {
  writer.put(report).put(totals).put(peak_bytes).put_vector(parameters);
}

AveragingDone AveragingDone::read(comm::ByteReader& reader) {
  AveragingDone done;
  done.report = reader.get<AveragingReport>();
  done.totals = reader.get<AveragingTotals>();
  done.peak_bytes = reader.get<std::int64_t>();
  done.parameters = reader.get_vector<float>();
  return done;
}

}  // namespace gradshare::train
