// mode.h: which tree a job uses (topology.mode: plain | mesh | auto) and the tree for a config.
#pragma once

#include <string>

#include "config/experiment_config.h"
#include "topology/tree.h"

namespace gradshare::topology {

enum class Mode { kPlain, kMesh };

// auto: plain below topology.mesh_from_workers workers, mesh from there on.
// Throws UserError for a mode string other than plain | mesh | auto.
Mode resolve_mode(const config::TopologyConfig& config, int worker_count);

const char* mode_name(Mode mode);

// topology.aggregate for a job of `ranks` ranks (as build_tree): whether its relays aggregate
// (true | false | auto: on a mesh).
bool aggregates(const config::TopologyConfig& config, int ranks);

// The tree for `ranks` ranks (master + ranks - 1 workers) as the config asks for it.
Tree build_tree(const config::TopologyConfig& config, int ranks);

}  // namespace gradshare::topology
