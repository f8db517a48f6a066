#include "train/strategy.h"

#include "core/errors.h"
#include "train/allreduce_strategy.h"
#include "train/downpour_strategy.h"
#include "train/gradient_sharing.h"
#include "train/local_strategy.h"
#include "train/parameter_averaging.h"

namespace gradshare::train {

void check_strategy_fits(const config::ExperimentConfig& config, int ranks) {
  const auto& strategy = config.training.strategy;
  if (strategy == "local" && ranks > 1)
    throw core::UserError("training.strategy 'local' runs in one process, but the job has " +
                          std::to_string(ranks) + " ranks (start it without mpirun)");
  if (strategy == "downpour" && ranks <= config.downpour.servers)
    throw core::UserError("training.strategy 'downpour' with downpour.servers " +
                          std::to_string(config.downpour.servers) +
                          " needs more ranks than servers, but the job has " +
                          std::to_string(ranks) + " (start more ranks or use fewer servers)");
  if (strategy != "local" && strategy != "gradient_sharing" && strategy != "allreduce" &&
      strategy != "parameter_averaging" && strategy != "downpour")
    throw core::UserError("training.strategy '" + strategy + "' is not available yet in this build");
  const auto spares = config.fault_tolerance.spares;
  if (spares > 0 && ranks > 1 && strategy != "gradient_sharing")
    throw core::UserError("fault_tolerance.spares is used by training.strategy gradient_sharing "
                          "only, not '" + strategy + "'");
  if (spares > 0 && ranks > 1 && ranks - spares < 2)
    throw core::UserError("fault_tolerance.spares " + std::to_string(spares) +
                          " leaves no worker among the job's " + std::to_string(ranks) +
                          " ranks (start at least " + std::to_string(spares + 2) + ")");
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
