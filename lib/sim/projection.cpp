#include "sim/projection.h"

#include <algorithm>
#include <limits>

namespace gradshare::sim {

Projection project(const topology::Tree& tree, const Placement& placement, const StepCosts& costs,
                   const LinkModel& link, int cores, double master_cpu_share, bool aggregate) {
  const Flow one{1.0, costs.message_bytes};
  const double largest = costs.max_message_bytes > 0 ? costs.max_message_bytes
                                                     : std::numeric_limits<double>::infinity();
  const Traffic traffic =
      aggregate ? count_aggregated_step_traffic(tree, placement, costs.message_bytes, largest,
                                                costs.aggregates_per_link_step)
                : count_step_traffic(tree, placement, one);
  Projection p;
  p.workers = tree.size() - 1;
  const double train = costs.compute_seconds + costs.encode_seconds;
  double all_cpu = 0;
  const auto consider = [&](double seconds, const std::string& what) {
    if (seconds > p.step_seconds) {
      p.step_seconds = seconds;
      p.bottleneck = what;
    }
  };
  for (int r = 0; r < tree.size(); ++r) {
    if (!tree.is_live(r)) continue;
    const auto& rank = traffic.ranks[static_cast<std::size_t>(r)];
    double cpu =
        rank.applied.messages * costs.apply_seconds + rank.sent.messages * costs.copy_seconds;
    if (r == 0) {
      p.master_cpu_seconds = cpu;
      p.master_copies = rank.sent.messages;
      consider(cpu, "master CPU (relaying)");
    } else {
      const double sharing = cpu + costs.step_overhead_seconds;
      cpu = sharing + train;
      if (cpu > p.busiest_worker_cpu_seconds) {
        p.busiest_worker_cpu_seconds = cpu;
        p.busiest_worker = r;
      }
      p.busiest_relay_copies = std::max(p.busiest_relay_copies, rank.relayed.messages);
      if (rank.relayed.messages > 0)
        p.inner_sharing_cpu_seconds =
            std::max(p.inner_sharing_cpu_seconds, sharing - costs.step_overhead_seconds);
      if (rank.links == 1) p.leaf_in_bytes = std::max(p.leaf_in_bytes, rank.received.bytes);
      // A worker's CPU is the limit in any case; it is named after what takes most of it.
      consider(cpu, sharing < train             ? "compute"
                    : rank.relayed.messages > 0 ? "inner worker CPU (applying, relaying)"
                                                : "worker CPU (applying)");
    }
    all_cpu += cpu;
  }
  const int master_node = placement.node[0];
  for (int n = 0; n < static_cast<int>(traffic.nodes.size()); ++n) {
    const auto& node = traffic.nodes[static_cast<std::size_t>(n)];
    const std::string whose = n == master_node ? "master's node link" : "a worker node's link";
    for (const Flow* flow : {&node.out, &node.in}) {
      if (flow->bytes > p.max_link_bytes) {
        p.max_link_bytes = flow->bytes;
        p.max_link_messages = flow->messages;
      }
      consider(link.seconds(flow->bytes, flow->messages),
               whose + (flow == &node.out ? ", outbound" : ", inbound"));
    }
  }
  if (cores > 0) {
    consider(all_cpu / cores, "shared cores");
    if (master_cpu_share > 0 && master_cpu_share < cores)
      consider((all_cpu - p.master_cpu_seconds) / (cores - master_cpu_share), "shared cores");
  }
  const double alone = train + costs.step_overhead_seconds;
  p.efficiency = p.step_seconds > 0 ? std::min(alone / p.step_seconds, 1.0) : 0.0;
  return p;
}

}  // namespace gradshare::sim
