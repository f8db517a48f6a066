// repair_policy.cpp: repair_options.
#include "comm/mpi/train/repair_policy.h"

#include "train/strategy_registry.h"

namespace gradshare::cli {

comm::RepairOptions repair_options(const config::ExperimentConfig& config,
                                   std::vector<std::uint8_t> join_info) {
  comm::RepairOptions options;
  options.mode = config.fault_tolerance.on_worker_failure == "replace" ? comm::RepairMode::kReplace
                                                                       : comm::RepairMode::kShrink;
  options.spawn = config.fault_tolerance.spares == 0;
  options.join_info = std::move(join_info);
  options.deadline_seconds = static_cast<double>(config.transport.timeout_ms) / 1000.0;
  const auto& strategy = train::strategy_named(config.training.strategy);
  options.master_failover = strategy.distributed;
  if (strategy.first_worker != nullptr) options.first_worker = strategy.first_worker(config);
  return options;
}

train::RepairOutcome repair_outcome(const comm::RepairedJob& repaired) {
  return {{repaired.lost, repaired.replaced, repaired.rounds},
          repaired.became_master,
          repaired.former_logical,
          repaired.began};
}

}  // namespace gradshare::cli
