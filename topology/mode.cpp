// mode.cpp: topology.mode resolution.
#include "topology/mode.h"

#include "core/errors.h"

namespace gradshare::topology {

Mode resolve_mode(const config::TopologyConfig& config, int worker_count) {
  if (config.mode == "plain") return Mode::kPlain;
  if (config.mode == "mesh") return Mode::kMesh;
  if (config.mode == "auto")
    return worker_count < config.mesh_from_workers ? Mode::kPlain : Mode::kMesh;
  throw core::UserError("topology.mode: expected plain, mesh or auto, got '" + config.mode + "'");
}

const char* mode_name(Mode mode) { return mode == Mode::kPlain ? "plain" : "mesh"; }

bool aggregates(const config::TopologyConfig& config, int ranks) {
  if (config.aggregate == "auto") return resolve_mode(config, ranks - 1) == Mode::kMesh;
  return config.aggregate == "true";
}

Tree build_tree(const config::TopologyConfig& config, int ranks) {
  if (resolve_mode(config, ranks - 1) == Mode::kPlain) return build_plain(ranks);
  // The config schema bounds both limits far below INT_MAX.
  return build_mesh(ranks, static_cast<int>(config.max_children),
                    static_cast<int>(config.max_depth));
}

}  // namespace gradshare::topology
