// averaging/protocol.cpp: parameter averaging's payloads' wire forms.
#include "train/averaging/protocol.h"

namespace gradshare::train {

void AveragingReport::add(const AveragingReport& o) {
  StepCounts::add(o);
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
  return {reader.get<bool>(), reader.get<std::int64_t>(), reader.get_vector<float>(), WorkerState::read(reader)};
}

void AveragingDone::write(comm::ByteWriter& writer) const {
  writer.put(report).put(totals).put(peak_bytes).put(minibatches).put_vector(parameters);
}

AveragingDone AveragingDone::read(comm::ByteReader& reader) {
  return {reader.get<AveragingReport>(), reader.get<AveragingTotals>(), reader.get<std::int64_t>(),
          reader.get<std::int64_t>(), reader.get_vector<float>()};
}

}  // namespace gradshare::train
