#include "train/strategy.h"

#include <cstdio>

#include "core/errors.h"
#include "core/log.h"
#include "runtime/checkpointer.h"
#include "train/strategy_registry.h"

namespace gradshare::train {

void check_strategy_fits(const config::ExperimentConfig& config, int ranks) {
  const auto& strategy = strategy_named(config.training.strategy);
  if (!strategy.distributed && ranks > 1)
    throw core::UserError("training.strategy '" + std::string(strategy.name) +
                          "' runs in one process, but the job has " + std::to_string(ranks) +
                          " ranks (start it without mpirun)");
  if (strategy.check_job) strategy.check_job(config, ranks);
  const auto spares = config.fault_tolerance.spares;
  if (spares > 0 && ranks > 1 && config.training.on_divergence == "rollback")
    throw core::UserError("training.on_divergence: rollback restarts the job's processes in "
                          "place, which fault_tolerance.spares does not support yet; use stop");
  if (spares > 0 && ranks > 1 && ranks - spares < 2)
    throw core::UserError("fault_tolerance.spares " + std::to_string(spares) +
                          " leaves no worker among the job's " + std::to_string(ranks) +
                          " ranks (start at least " + std::to_string(spares + 2) + ")");
}

int run_with_rollback(runtime::RunContext& context) {
  int code = run_strategy(context);
  const auto& training = context.config.training;
  if (training.on_divergence != "rollback") return code;
  for (std::int64_t attempt = 1; code == core::kExitDiverged; ++attempt) {
    if (attempt > training.max_rollbacks) {
      core::log_error("still diverging after " + std::to_string(training.max_rollbacks) +
                      " rollbacks (training.max_rollbacks): giving up");
      break;
    }
    auto& rate = context.config.optimizer.learning_rate;
    rate *= training.rollback_lr_factor;
    const auto checkpoint = runtime::newest_checkpoint(context.run_directory);
    char line[96];
    std::snprintf(line, sizeof line, " with optimizer.learning_rate %g", rate);
    core::log_warn("rollback " + std::to_string(attempt) + "/" +
                   std::to_string(training.max_rollbacks) + ": restarting from " +
                   (checkpoint ? "the newest good checkpoint " + *checkpoint
                               : std::string("the start (no checkpoint yet)")) +
                   line);
    code = run_strategy(context);
  }
  return code;
}

int run_strategy(runtime::RunContext& context) {
  return strategy_named(context.config.training.strategy).run(context);
}

}  // namespace gradshare::train
