// model_file.h: turning a model (and optimizer) into a checkpoint and back.
#pragma once

#include <string>

#include "ckpt/checkpoint.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "train/partition_scheduler.h"
#include "train/run_context.h"

namespace gradshare::train {

// A checkpoint holding the model's parameters and per-layer views, the resolved config and
// the position in training; the optimizer's state when one is given.
ckpt::Checkpoint make_checkpoint(const RunContext& context, const nn::Model& model,
                                 nn::Optimizer* optimizer,
                                 std::int64_t iteration, const DataPosition& position);

// Puts a checkpoint's parameters (and optimizer state, when both have it) into place.
// UserError when the checkpoint does not fit the model.
void restore_checkpoint(const ckpt::Checkpoint& checkpoint, const std::string& source,
                        nn::Model& model, nn::Optimizer* optimizer);
DataPosition data_position(const ckpt::Checkpoint& checkpoint);

// Rebuilds the model a checkpoint describes (from its stored config) with its parameters.
struct LoadedModel {
  config::ExperimentConfig config;
  nn::Model model;
  ckpt::Checkpoint checkpoint;
};
LoadedModel load_model(const std::string& checkpoint_path,
                       const std::vector<std::string>& overrides = {});

}  // namespace gradshare::train
