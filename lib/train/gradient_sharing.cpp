#include "train/gradient_sharing.h"

#include <algorithm>
#include <cmath>

#include "comm/control_plane.h"
#include "comm/data_plane.h"
#include "comm/graph_comm.h"
#include "comm/make_data_plane.h"
#include "core/log.h"
#include "topology/mode.h"
#include "topology/render.h"
#include "topology/tree.h"
#include "train/sharing_roles.h"

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

int run_gradient_sharing(RunContext& context) {
  const auto& cfg = context.config;
  const auto mode = topology::resolve_mode(cfg.topology, context.worker_count());
  const auto tree = topology::build_tree(cfg.topology, context.size);
  if (context.is_master() && mode == topology::Mode::kMesh)
    core::log_info("mesh tree:\n" + topology::render(tree));
  const comm::Communicator graph = comm::make_graph_comm(context.world, tree);
  auto plane = comm::make_data_plane(cfg.transport, graph.get(), tree.links(context.rank));
  comm::ControlPlane control(context.world, static_cast<double>(cfg.transport.timeout_ms) / 1000.0);
  return context.is_master() ? run_sharing_master(context, *plane, control)
                             : run_sharing_worker(context, *plane, control);
}

}  // namespace gradshare::train
