#include "train/worker_state.h"

#include <algorithm>

#include "comm/byte_io.h"
#include "core/errors.h"

namespace gradshare::train {

void WorkerState::write(comm::ByteWriter& writer) const {
  writer.put(optimizer_step).put(tau).put_vector(residual);
  writer.put<std::uint64_t>(optimizer_state.size());
  for (const auto& buffer : optimizer_state) {
    writer.put_string(buffer.name);
    writer.put_vector(buffer.values);
  }
}

WorkerState WorkerState::read(comm::ByteReader& reader) {
  WorkerState state;
  state.optimizer_step = reader.get<std::int64_t>();
  state.tau = reader.get<float>();
  state.residual = reader.get_vector<float>();
  const auto count = reader.get<std::uint64_t>();
  if (count > 64) throw core::RuntimeError("malformed worker state: " + std::to_string(count) + " optimizer buffers");
  for (std::uint64_t i = 0; i < count; ++i) {
    ckpt::NamedBuffer buffer;
    buffer.name = reader.get_string();
    buffer.values = reader.get_vector<float>();
    state.optimizer_state.push_back(std::move(buffer));
  }
  return state;
}

void StartState::write(comm::ByteWriter& writer) const {
  writer.put<std::uint8_t>(resume ? 1 : 0).put_vector(parameters);
  worker.write(writer);
}

StartState StartState::read(comm::ByteReader& reader) {
  return {reader.get<std::uint8_t>() != 0, reader.get_vector<float>(), WorkerState::read(reader)};
}

void Start::write(comm::ByteWriter& writer) const {
  writer.put(step);
  state.write(writer);
}

Start Start::read(comm::ByteReader& reader) {
  return {reader.get<std::int64_t>(), StartState::read(reader)};
}

WorkerState capture_worker_state(nn::Optimizer& optimizer, float tau,
                                 std::span<const float> residual) {
  WorkerState state;
  state.residual.assign(residual.begin(), residual.end());
  state.optimizer_step = optimizer.step();
  state.tau = tau;
  for (const auto& buffer : optimizer.state())
    state.optimizer_state.push_back({buffer.name, {buffer.values.begin(), buffer.values.end()}});
  return state;
}

std::size_t restore_optimizer(const WorkerState& state, nn::Optimizer& optimizer) {
  std::size_t matched = 0;
  for (auto& buffer : optimizer.state()) {
    auto it = std::find_if(state.optimizer_state.begin(), state.optimizer_state.end(),
                           [&](const ckpt::NamedBuffer& saved) { return saved.name == buffer.name; });
    if (it == state.optimizer_state.end() || it->values.size() != buffer.values.size()) continue;
    std::copy(it->values.begin(), it->values.end(), buffer.values.begin());
    ++matched;
  }
  optimizer.set_step(state.optimizer_step);
  return matched;
}

void StateReply::write(comm::ByteWriter& writer) const {
  writer.put(sent_seq);
  state.write(writer);
}

StateReply StateReply::read(comm::ByteReader& reader) {
  return {reader.get<std::uint64_t>(), WorkerState::read(reader)};
}

}  // namespace gradshare::train
