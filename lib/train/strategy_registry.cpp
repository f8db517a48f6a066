// strategy_registry.cpp: the table of strategies (see strategy_registry.h).
#include "train/strategy_registry.h"

#include "core/errors.h"
#include "topology/mode.h"
#include "train/allreduce/allreduce_strategy.h"
#include "train/allreduce/roles.h"
#include "train/averaging/parameter_averaging.h"
#include "train/averaging/roles.h"
#include "train/downpour/roles.h"
#include "train/downpour/strategy.h"
#include "train/local/local_strategy.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/roles.h"

namespace gradshare::train {
namespace {

std::string sharing_banner(const config::ExperimentConfig& config, int workers) {
  // The banner counts spares among the workers; the tree is built without them.
  const int training = workers - static_cast<int>(config.fault_tolerance.spares);
  const auto mode = topology::resolve_mode(config.topology, training);
  return std::string(" | topology ") + topology::mode_name(mode) +
         (topology::aggregates(config.topology, training + 1) ? " (aggregating)" : "") +
         " | transport " + config.transport.data_plane;
}

std::string downpour_banner(const config::ExperimentConfig& config, int) {
  return " | servers " + std::to_string(config.downpour.servers);
}

void downpour_job(const config::ExperimentConfig& config, int ranks) {
  const auto spares = config.fault_tolerance.spares;
  if (ranks - spares <= config.downpour.servers)
    throw core::UserError("training.strategy 'downpour' with downpour.servers " +
                          std::to_string(config.downpour.servers) +
                          " needs more ranks than servers, but the job has " +
                          std::to_string(ranks - spares) +
                          (spares > 0 ? " besides its spares" : "") +
                          " (start more ranks or use fewer servers)");
}

// Ranks 1..K-1 serve shards: a lost master's place goes to a spare or to a worker.
int downpour_first_worker(const config::ExperimentConfig& config) {
  return config.downpour.servers;
}

}  // namespace

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> table = {
      {"gradient_sharing", run_gradient_sharing, true, nullptr, sharing_banner, nullptr,
       [](runtime::RunContext& c, SharingSession& s) { return run_sharing_worker(c, s, true); },
       nullptr},
      {"parameter_averaging", run_parameter_averaging, true, nullptr, nullptr,
       [](runtime::RunContext& c, GroupSession& s) { return run_averaging_worker(c, s, true); },
       nullptr, nullptr},
      {"downpour", run_downpour, true, downpour_job, downpour_banner, run_downpour_replacement,
       nullptr, downpour_first_worker},
      {"allreduce", run_allreduce, true, nullptr, nullptr,
       [](runtime::RunContext& c, GroupSession& s) { return run_allreduce_worker(c, s, true); },
       nullptr, nullptr},
      {"local", run_local, false, nullptr, nullptr, nullptr, nullptr, nullptr},
  };
  return table;
}

const Strategy& strategy_named(const std::string& name) {
  std::string known;
  for (const auto& strategy : strategies()) {
    if (name == strategy.name) return strategy;
    known += (known.empty() ? "" : ", ") + std::string(strategy.name);
  }
  throw core::UserError("training.strategy '" + name + "' is not one of " + known);
}

}  // namespace gradshare::train
