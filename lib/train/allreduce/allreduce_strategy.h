// allreduce/allreduce_strategy.h: synchronous data parallelism, the reference every result is
// compared against: each step every worker computes a gradient on its own minibatch, the
// gradients are averaged (weighted by samples) with an all-reduce over the workers' group, and
// every worker applies the same update with the same updater. Worker 1 reports progress and its
// model to the master, which evaluates each epoch and writes the final model (messages:
// allreduce/protocol.h).
#pragma once

#include "train/run_context.h"

namespace gradshare::train {

int run_allreduce(RunContext& context);

}  // namespace gradshare::train
