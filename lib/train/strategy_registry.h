// strategy_registry.h: every training strategy in one table: its name (training.strategy), how
// a rank runs it, what a job needs for it, what the banner adds, which ranks a repair replaces
// and how a replacement joins. Adding a strategy is adding an entry; nothing else switches on
// the name.
#pragma once

#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "runtime/run_context.h"

namespace gradshare::train {

struct Strategy {
  const char* name;
  // Runs this rank's role (master, worker, server or spare); returns the process exit code.
  int (*run)(runtime::RunContext& context);
  // False: one process, no master (`local`).
  bool distributed;
  // What this strategy needs of the job beyond a master and a worker: UserError naming the
  // fix. `ranks` counts the spares; null: nothing more.
  void (*check_job)(const config::ExperimentConfig& config, int ranks);
  // What the banner adds after "strategy <name>" for `workers` workers; null: nothing.
  std::string (*banner)(const config::ExperimentConfig& config, int workers);
  // How a spawned or spare process joins as a worker: over the job's group session, or over
  // the sharing session; exactly one is set for a distributed strategy.
  int (*replace_in_group)(runtime::RunContext& context, GroupSession& session);
  int (*replace_in_sharing)(runtime::RunContext& context, SharingSession& session);
  // The lowest logical rank of a worker (the repair's RepairOptions::first_worker); null: 1.
  int (*first_worker)(const config::ExperimentConfig& config);
};

// Every strategy, in the order the reference lists them.
const std::vector<Strategy>& strategies();

// The strategy called `name`; UserError naming training.strategy and the known names otherwise.
const Strategy& strategy_named(const std::string& name);

}  // namespace gradshare::train
