#include "train/sharing/gradient_sharing.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/log.h"
#include "topology/mode.h"
#include "train/replica.h"
#include "train/sharing/aggregating_relay.h"
#include "train/sharing/roles.h"

namespace gradshare::train {

double relative_max_difference(std::span<const float> a, std::span<const float> b) {
  double difference = 0, scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    difference = std::max(difference, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  if (a.size() != b.size()) return INFINITY;
  return scale > 0 ? difference / scale : difference;
}

bool sharing_aggregates(const config::ExperimentConfig& config, const topology::Tree& tree) {
  return topology::aggregates(config.topology, static_cast<int>(tree.parent.size()));
}

std::int64_t sharing_staleness_bound(const config::ExperimentConfig& config,
                                     const topology::Tree& tree) {
  const auto bound = config.encoding.max_staleness;
  return sharing_aggregates(config, tree) ? aggregated_staleness_bound(bound, tree.max_depth())
                                          : bound;
}

double equivalence_tolerance(bool aggregating, double most_messages_applied) {
  if (!aggregating) return kEquivalenceTolerance;
  return std::max(kEquivalenceTolerance, 8.0 * std::ldexp(std::sqrt(most_messages_applied), -24));
}

config::ExperimentConfig sharing_worker_config(const config::ExperimentConfig& config,
                                               int workers) {
  auto local = config.encoding.combine == "sum" ? one_of_summed_workers(config, workers) : config;
  if (config.encoding.momentum == "compensate") local = with_compensated_momentum(local, workers);
  return local;
}

std::string sharing_momentum_line(const config::ExperimentConfig& config, int workers) {
  if (config.encoding.momentum == "mask")
    return "gradient-sharing workers clear the momentum of every element a message carries "
           "(encoding.momentum: mask)";
  if (config.encoding.momentum != "compensate") return "";
  return compensated_momentum_line(config, workers, "gradient-sharing workers",
                                   "encoding.momentum");
}

int run_gradient_sharing(runtime::RunContext& context) {
  GS_CHECK(context.links.sharing_session, "no gradient-sharing session for this job");
  const auto session = context.links.sharing_session(context);
  context.begin_training();
  if (session->is_spare()) {
    if (!wait_as_spare(*session, context)) return core::kExitOk;
    // A repair after the master's loss may give a spare its place (sharing/takeover.h).
    return context.is_master() ? take_over_sharing_master(context, *session, std::nullopt)
                               : run_sharing_worker(context, *session, /*replacement=*/true);
  }
  if (context.is_master()) return run_sharing_master(context, *session);
  return run_sharing_worker(context, *session, /*replacement=*/false);
}

}  // namespace gradshare::train
