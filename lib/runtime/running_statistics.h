// running_statistics.h: a TorchScript module's running statistics (batch norm) on a master.
//
// A master trains nothing, so training never updates the running mean and variance of the
// replica it evaluates and saves. Before it does either, it sets them to their plain average
// over model.refresh_batches training minibatches (drawn from run.seed) at its current
// parameters ("precise batch norm"; the module does the averaging, nn/module_network.h), so
// what it held before does not count. The same rule holds for every strategy, so no protocol
// carries the workers' statistics. A single-process (local) run keeps the statistics its
// training produced.
#pragma once

#include "nn/model.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

// Does nothing for models without buffers and for a rank that trains the model itself.
void refresh_running_statistics(nn::Model& model, const RunContext& context);

}  // namespace gradshare::runtime
