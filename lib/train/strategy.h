// strategy.h: picks the training strategy the config names and runs it on this rank.
#pragma once

#include "config/experiment_config.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// UserError when the strategy cannot run with `ranks` processes (e.g. a distributed strategy
// needs a master and at least one worker).
void check_strategy_fits(const config::ExperimentConfig& config, int ranks);

// Runs the strategy; returns the process exit code.
int run_strategy(runtime::RunContext& context);

// run_strategy, and after a divergence (core::kExitDiverged, divergence_guard.h) with
// training.on_divergence: rollback, again from the newest checkpoint with the learning rate
// scaled by training.rollback_lr_factor, at most training.max_rollbacks times; each try is
// logged.
int run_with_rollback(runtime::RunContext& context);

}  // namespace gradshare::train
