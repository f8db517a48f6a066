// downpour/checkpoint.cpp: the start every rank of a (resumed) Downpour run gets, and the
// server optimizer's state in and out of checkpoints.
#include "train/downpour/checkpoint.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "runtime/checkpointer.h"
#include "runtime/model_file.h"

namespace gradshare::train {

namespace {
constexpr const char* kStrategy = "downpour";

// A worker's start: its own saved optimizer state. A Downpour checkpoint's single state is the
// server optimizer's, never a worker's.
StartState worker_start(const std::optional<ckpt::Checkpoint>& resume, std::size_t worker) {
  StartState start = start_state(resume, worker);
  if (resume && resume->strategy == kStrategy && resume->worker_optimizers.empty())
    start.worker = WorkerState{};
  return start;
}
}  // namespace

DownpourStart share_downpour_start(runtime::RunContext& context, comm::ControlChannel& control,
                                   const DownpourLayout& layout, nn::Model& model) {
  DownpourStart start;
  if (!context.is_master()) {
    start.own = receive<Start>(control, 0, "the start state").state;
    if (start.own.resume) {
      GS_CHECK(start.own.parameters.size() == model.parameter_count(),
               "the master sent " + std::to_string(start.own.parameters.size()) + " parameters");
      std::copy(start.own.parameters.begin(), start.own.parameters.end(),
                model.parameters().begin());
    }
    return start;
  }
  start.resume = runtime::Checkpointer::find_resume(context);
  const auto& resume = start.resume;
  if (resume) {
    runtime::restore_checkpoint(*resume, "checkpoint", model, nullptr);
    if (resume->strategy != kStrategy)
      core::log_info("the checkpoint was written by " + resume->strategy +
                     ": the parameter servers' optimizer starts afresh");
    runtime::note_resize(
        context, *resume,
        std::to_string(layout.servers()) +
            " parameter server(s) cut the checkpoint's parameters and server optimizer "
            "state into their shards; worker w starts from saved worker (w mod " +
            std::to_string(std::max<std::size_t>(resume->worker_optimizers.size(), 1)) +
            ")'s optimizer state");
    start.own.resume = true;
    start.own.worker = server_shard_state(*resume, layout, 0);
  }
  for (int rank = 1; rank < context.size; ++rank) {
    StartState other;
    if (layout.is_server(rank)) {
      other.resume = resume.has_value();
      if (resume) {
        other.parameters = resume->parameters;
        other.worker = server_shard_state(*resume, layout, rank);
      }
    } else {
      other = worker_start(resume, static_cast<std::size_t>(layout.worker_index(rank)));
    }
    send(control, rank, Start{0, other});
  }
  return start;
}

void put_server_state(ckpt::Checkpoint& checkpoint, const std::vector<WorkerState>& shards,
                      const DownpourLayout& layout) {
  GS_CHECK(static_cast<int>(shards.size()) == layout.servers(),
           std::to_string(shards.size()) + " server states for " +
               std::to_string(layout.servers()) + " shards");
  checkpoint.optimizer_step = shards[0].optimizer_step;
  checkpoint.optimizer_state.clear();
  for (const auto& buffer : shards[0].optimizer_state)
    checkpoint.optimizer_state.push_back({buffer.name, std::vector<float>(layout.parameters())});
  for (int s = 0; s < layout.servers(); ++s) {
    const auto& state = shards[static_cast<std::size_t>(s)].optimizer_state;
    const ShardRange range = layout.shard(s);
    if (state.size() != checkpoint.optimizer_state.size())
      throw core::RuntimeError("parameter server " + std::to_string(s) + " has " +
                               std::to_string(state.size()) + " optimizer buffers, server 0 " +
                               std::to_string(checkpoint.optimizer_state.size()));
    for (std::size_t b = 0; b < state.size(); ++b) {
      auto& target = checkpoint.optimizer_state[b];
      if (state[b].name != target.name || state[b].values.size() != range.size())
        throw core::RuntimeError("parameter server " + std::to_string(s) +
                                 " sent optimizer "
                                 "buffer '" +
                                 state[b].name + "' of " + std::to_string(state[b].values.size()) +
                                 " values for a shard "
                                 "of " +
                                 std::to_string(range.size()));
      std::copy(state[b].values.begin(), state[b].values.end(),
                target.values.begin() + static_cast<std::ptrdiff_t>(range.begin));
    }
  }
}

void put_servers(ckpt::Checkpoint& checkpoint, const std::vector<const ShardSnapshot*>& shards,
                 const DownpourLayout& layout) {
  GS_CHECK(checkpoint.parameters.size() == layout.parameters(),
           "a checkpoint of " + std::to_string(checkpoint.parameters.size()) + " parameters");
  std::vector<WorkerState> states;
  for (int s = 0; s < layout.servers(); ++s) {
    const ShardSnapshot& shard = *shards.at(static_cast<std::size_t>(s));
    const ShardRange range = layout.shard(s);
    if (shard.shard != s || shard.parameters.size() != range.size())
      throw core::RuntimeError("parameter server " + std::to_string(s) + " sent shard " +
                               std::to_string(shard.shard) + " of " +
                               std::to_string(shard.parameters.size()) + " parameters for one of " +
                               std::to_string(range.size()));
    std::copy(shard.parameters.begin(), shard.parameters.end(),
              checkpoint.parameters.begin() + static_cast<std::ptrdiff_t>(range.begin));
    states.push_back(shard.optimizer);
  }
  put_server_state(checkpoint, states, layout);
}

void put_rank_states(ckpt::Checkpoint& checkpoint, const ShardSnapshot& own,
                     const std::map<int, DownpourState>& replies, const DownpourLayout& layout,
                     int stand_in) {
  std::vector<const ShardSnapshot*> shards{&own};
  for (int s = 1; s < layout.servers(); ++s) {
    const auto& reply = replies.at(s);
    GS_CHECK(reply.shard, "server " + std::to_string(s) + " answered without its shard");
    shards.push_back(&*reply.shard);
  }
  put_servers(checkpoint, shards, layout);
  const auto& stand_in_state = replies.at(stand_in).state;
  for (int w = 0; w < layout.workers(); ++w) {
    const auto reply = replies.find(layout.worker_rank(w));
    const auto& state = reply != replies.end() ? reply->second.state : stand_in_state;
    checkpoint.worker_optimizers.push_back({state.optimizer_step, state.optimizer_state});
  }
}

WorkerState server_shard_state(const ckpt::Checkpoint& checkpoint, const DownpourLayout& layout,
                               int shard) {
  WorkerState state;
  if (checkpoint.strategy != kStrategy) return state;
  const ShardRange range = layout.shard(shard);
  state.optimizer_step = checkpoint.optimizer_step;
  for (const auto& buffer : checkpoint.optimizer_state) {
    GS_CHECK(buffer.values.size() == layout.parameters(),
             "optimizer buffer '" + buffer.name + "' of " + std::to_string(buffer.values.size()));
    state.optimizer_state.push_back(
        {buffer.name,
         {buffer.values.begin() + static_cast<std::ptrdiff_t>(range.begin),
          buffer.values.begin() + static_cast<std::ptrdiff_t>(range.end)}});
  }
  return state;
}

}  // namespace gradshare::train
