#include "train/worker_state.h"

#include <algorithm>

#include "comm/byte_io.h"
#include "core/errors.h"
#include "runtime/checkpointer.h"
#include "runtime/model_file.h"

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
  return runtime::copy_optimizer_state(state.optimizer_step, state.optimizer_state, optimizer);
}

void restore_optimizer_state(const WorkerState& saved, nn::Optimizer& optimizer,
                             const std::string& source) {
  runtime::restore_optimizer_state(saved.optimizer_step, saved.optimizer_state, optimizer, source);
}

StartState start_state(const std::optional<ckpt::Checkpoint>& resume, std::size_t worker) {
  StartState start;
  if (!resume) return start;
  start.resume = true;
  start.parameters = resume->parameters;
  auto saved = ckpt::optimizer_for_worker(*resume, worker);
  start.worker.optimizer_step = saved.step;
  start.worker.optimizer_state = std::move(saved.buffers);
  return start;
}

void apply_start_state(const StartState& start, nn::Model& model, nn::Optimizer& optimizer) {
  if (!start.resume) return;
  GS_CHECK(start.parameters.size() == model.parameter_count(),
           "the master sent " + std::to_string(start.parameters.size()) + " parameters for a " +
               std::to_string(model.parameter_count()) + "-parameter model");
  std::copy(start.parameters.begin(), start.parameters.end(), model.parameters().begin());
  restore_optimizer_state(start.worker, optimizer, "the resumed checkpoint");
}

std::string write_worker_part(const std::string& directory, std::int64_t iteration, int rank,
                              const WorkerState& state) {
  const std::string part = runtime::worker_part_name(iteration, rank);
  ckpt::write_worker_part(runtime::checkpoint_path(directory, part),
                          {{state.optimizer_step, state.optimizer_state}, state.residual});
  return part;
}

}  // namespace gradshare::train
