// worker_state.h: the part of a gradient-sharing worker's state the master does not hold: the
// optimizer's state vectors and the threshold tau. The master asks a live worker for it to
// write a checkpoint, and hands it (with the parameters) to workers when a run resumes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "comm/control_channel.h"
#include "train/tags.h"
#include "nn/model.h"
#include "nn/optimizer.h"

namespace gradshare::train {

struct WorkerState {
  std::int64_t optimizer_step = 0;
  std::vector<ckpt::NamedBuffer> optimizer_state;
  float tau = 0;
  std::vector<float> residual;  // the encoder's residual (empty where there is none)

  // {optimizer step: i64, tau: f32, residual: f32[], buffer count: u64 (<= 64),
  //  that many {name: string, values: f32[]}}
  void write(comm::ByteWriter& writer) const;
  static WorkerState read(comm::ByteReader& reader);
};

// Writes worker rank `rank`'s `state` (optimizer state and residual) as its part of the
// checkpoint at `iteration` in `directory` (runtime::worker_part_name); returns the part's name.
// Throws core::RuntimeError naming the file.
std::string write_worker_part(const std::string& directory, std::int64_t iteration, int rank,
                              const WorkerState& state);

// A gradient-sharing worker's reply to a state request: its state, and the seq of the last
// update it sent before replying (for a checkpoint, the master applies every update up to it
// before taking its snapshot, so the saved parameters hold exactly what the saved residual
// does not). For a checkpoint whose part the worker wrote itself (sharing/protocol.h,
// CheckpointRequest), `part` names it (relative to the checkpoint directory, `part_bytes` its
// size) and the state holds no optimizer buffers and no residual.
//   {sent_seq: u64, state, part: string, part_bytes: u64}
struct StateReply {
  static constexpr comm::Tag kTag = tags::kSharingState;
  std::uint64_t sent_seq = 0;
  WorkerState state;
  std::string part;
  std::uint64_t part_bytes = 0;
  static auto fields(auto& self) {
    return std::tie(self.sent_seq, self.state, self.part, self.part_bytes);
  }
};

WorkerState capture_worker_state(nn::Optimizer& optimizer, float tau,
                                 std::span<const float> residual = {});
// Copies buffers whose name and size match into the optimizer; returns how many matched.
std::size_t restore_optimizer(const WorkerState& state, nn::Optimizer& optimizer);
// restore_optimizer, warning (naming `source`) when parts of the saved state are missing or
// belong to another optimizer: those parts start from zero.
void restore_optimizer_state(const WorkerState& saved, nn::Optimizer& optimizer,
                             const std::string& source);

// What the master sends every worker before training: a fresh start, or the parameters and
// worker state of the checkpoint being resumed.
struct StartState {
  bool resume = false;
  std::vector<float> parameters;
  WorkerState worker;

  // {resume: u8, parameters: f32[], worker state}
  static auto fields(auto& self) { return std::tie(self.resume, self.parameters, self.worker); }
};

// What worker `worker` (0-based, rank order) starts from: a fresh start without a checkpoint,
// else the checkpoint's parameters and ckpt::optimizer_for_worker's state.
StartState start_state(const std::optional<ckpt::Checkpoint>& resume, std::size_t worker);
// Puts a StartState into a worker's model and optimizer (nothing for a fresh start); warns when
// the saved optimizer state does not fit the configured optimizer.
void apply_start_state(const StartState& start, nn::Model& model, nn::Optimizer& optimizer);

// master -> worker before training: the start state and the step (or iteration) training
// continues at: 0, or the resumed checkpoint's.
struct Start {
  static constexpr comm::Tag kTag = tags::kStart;
  std::int64_t step = 0;
  StartState state;
  static auto fields(auto& self) { return std::tie(self.step, self.state); }
};

}  // namespace gradshare::train
