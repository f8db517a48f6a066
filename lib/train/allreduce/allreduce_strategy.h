// allreduce/allreduce_strategy.h: synchronous data parallelism, the reference every result is
// compared against: each step every worker computes a gradient on its own minibatch, the
// gradients are averaged (weighted by samples) with an all-reduce over the workers' group, and
// every worker applies the same update with the same updater. Worker index 0 reports progress
// and its model to the master, which evaluates each epoch and writes the final model (messages:
// allreduce/protocol.h). Under ULFM a lost worker is replaced or left out in-job
// (group_recovery.h).
#pragma once

#include "runtime/run_context.h"

namespace gradshare::train {

int run_allreduce(runtime::RunContext& context);

}  // namespace gradshare::train
