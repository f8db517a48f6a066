// model_file.h: turning a model (and optimizer) into a checkpoint and back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "runtime/partition_scheduler.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

// The run's model as every rank builds it: the config's layers (or TorchScript module),
// initialised from run.seed.
nn::Model build_model(const config::ExperimentConfig& config);
// The master's first line about the model: "model: N parameters" and the layer summary.
void log_model(const nn::Model& model);

// A checkpoint holding the model's parameters and per-layer views, the resolved config and
// the position in training; the optimizer's state when one is given.
// A UserError naming `source` where the checkpoint cannot hold this model's state: another
// parameter count, or for a TorchScript module other tensor names, shapes or buffers.
void check_checkpoint_matches(const ckpt::Checkpoint& checkpoint, const std::string& source,
                              const nn::Model& model);

ckpt::Checkpoint make_checkpoint(const RunContext& context, const nn::Model& model,
                                 nn::Optimizer* optimizer, std::int64_t iteration,
                                 const DataPosition& position);

// Puts a checkpoint's parameters (and optimizer state, when both have it) into place.
// UserError when the checkpoint does not fit the model.
void restore_checkpoint(const ckpt::Checkpoint& checkpoint, const std::string& source,
                        nn::Model& model, nn::Optimizer* optimizer);
DataPosition data_position(const ckpt::Checkpoint& checkpoint);

// Copies the saved optimizer buffers whose name and size match into `optimizer` and sets its
// step; returns how many matched.
std::size_t copy_optimizer_state(std::int64_t step, const std::vector<ckpt::NamedBuffer>& saved,
                                 nn::Optimizer& optimizer);
// copy_optimizer_state, warning (naming `source`) when parts of the saved state are missing or
// belong to another optimizer: those parts start from zero.
void restore_optimizer_state(std::int64_t step, const std::vector<ckpt::NamedBuffer>& saved,
                             nn::Optimizer& optimizer, const std::string& source);
// Logs, and records in metrics.jsonl, that a checkpoint of another world size is resumed and
// what the strategy does about it (`how`); nothing when the sizes agree.
void note_resize(RunContext& context, const ckpt::Checkpoint& checkpoint, const std::string& how);

// Where a resumed run of a synchronous strategy starts: the checkpoint's iteration (minibatches
// of the run trained by all workers together) must lie in its epoch under this config
// (UserError otherwise). Another strategy's iteration counts something else: such a run
// restarts the checkpoint's epoch (logged).
std::int64_t resume_iteration(const ckpt::Checkpoint& checkpoint, const std::string& strategy,
                              std::int64_t batches, std::int64_t epochs);

// Rebuilds the model a checkpoint describes (from its stored config) with its parameters.
struct LoadedModel {
  config::ExperimentConfig config;
  nn::Model model;
  ckpt::Checkpoint checkpoint;
};
LoadedModel load_model(const std::string& checkpoint_path,
                       const std::vector<std::string>& overrides = {});

}  // namespace gradshare::runtime
