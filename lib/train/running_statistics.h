// running_statistics.h: a TorchScript module's running statistics (batch norm) on a master.
//
// A master trains nothing, so training never updates the running mean and variance of the
// replica it evaluates and saves. Before it does either, it recomputes them at its current
// parameters from training minibatches, run in train mode without gradients ("precise batch
// norm"): kRefreshBatches of training.batch_size samples drawn from run.seed. With batch norm's
// default momentum of 0.1, what the replica held before weighs 0.9^50 < 1 %. The same rule
// holds for every strategy, so no protocol carries the workers' statistics. A single-process
// (local) run keeps the statistics its training produced.
#pragma once

#include "nn/model.h"
#include "train/run_context.h"

namespace gradshare::train {

inline constexpr std::size_t kRefreshBatches = 50;

// Does nothing for models without buffers and for a rank that trains the model itself.
void refresh_running_statistics(nn::Model& model, const RunContext& context);

}  // namespace gradshare::train
