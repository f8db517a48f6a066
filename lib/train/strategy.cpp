#include "train/strategy.h"

#include <cstdio>

#include "core/errors.h"
#include "core/log.h"
#include "train/checkpointer.h"
#include "train/allreduce/allreduce_strategy.h"
#include "train/downpour/strategy.h"
#include "train/sharing/gradient_sharing.h"
#include "train/local/local_strategy.h"
#include "train/averaging/parameter_averaging.h"

namespace gradshare::train {

void check_strategy_fits(const config::ExperimentConfig& config, int ranks) {
  const auto& strategy = config.training.strategy;
  if (strategy == "local" && ranks > 1)
    throw core::UserError("training.strategy 'local' runs in one process, but the job has " +
                          std::to_string(ranks) + " ranks (start it without mpirun)");
  const auto spares = config.fault_tolerance.spares;
  if (strategy == "downpour" && ranks - spares <= config.downpour.servers)
    throw core::UserError("training.strategy 'downpour' with downpour.servers " +
                          std::to_string(config.downpour.servers) +
                          " needs more ranks than servers, but the job has " +
                          std::to_string(ranks - spares) +
                          (spares > 0 ? " besides its spares" : "") +
                          " (start more ranks or use fewer servers)");
  if (strategy != "local" && strategy != "gradient_sharing" && strategy != "allreduce" &&
      strategy != "parameter_averaging" && strategy != "downpour")
    throw core::UserError("training.strategy '" + strategy + "' is not available yet in this build");
  if (spares > 0 && ranks > 1 && strategy == "local")
    throw core::UserError("fault_tolerance.spares is used by the strategies with workers, not "
                          "'local'");
  if (spares > 0 && ranks > 1 && config.training.on_divergence == "rollback")
    throw core::UserError("training.on_divergence: rollback restarts the job's processes in "
                          "place, which fault_tolerance.spares does not support yet; use stop");
  if (spares > 0 && ranks > 1 && ranks - spares < 2)
    throw core::UserError("fault_tolerance.spares " + std::to_string(spares) +
                          " leaves no worker among the job's " + std::to_string(ranks) +
                          " ranks (start at least " + std::to_string(spares + 2) + ")");
}

int run_with_rollback(RunContext& context) {
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
    const auto checkpoint = newest_checkpoint(context.run_directory);
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

int run_strategy(RunContext& context) {
  const auto& strategy = context.config.training.strategy;
  if (strategy == "local") return run_local(context);
  if (strategy == "gradient_sharing") return run_gradient_sharing(context);
  if (strategy == "allreduce") return run_allreduce(context);
  if (strategy == "parameter_averaging") return run_parameter_averaging(context);
  if (strategy == "downpour") return run_downpour(context);
  throw core::UserError("training.strategy '" + strategy + "' is not implemented yet");
}

}  // namespace gradshare::train
