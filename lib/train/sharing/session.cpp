// sharing/session.cpp: the tree after a repair, whatever kind of session.
#include "train/sharing/session.h"

#include <algorithm>

#include "core/errors.h"

namespace gradshare::train {

std::optional<std::size_t> keep_budget(const SharingSession& session,
                                       const config::ExperimentConfig& config) {
  if (!session.fault_tolerant()) return std::nullopt;
  return static_cast<std::size_t>(config.fault_tolerance.keep_bytes);
}

namespace {

// A star's limits: every worker under the master.
struct Limits {
  int max_children;
  int max_depth;
};

Limits tree_limits(const config::TopologyConfig& config, topology::Mode mode, int ranks) {
  if (mode == topology::Mode::kPlain) return {std::max(ranks, 1), 1};
  return {static_cast<int>(config.max_children), static_cast<int>(config.max_depth)};
}

}  // namespace

topology::Tree repaired_tree(const config::TopologyConfig& config, topology::Mode mode,
                             topology::Tree tree, const std::vector<int>& lost,
                             const std::vector<int>& replaced) {
  const auto limits = tree_limits(config, mode, tree.size());
  GS_CHECK(
      std::is_sorted(lost.begin(), lost.end()) && std::is_sorted(replaced.begin(), replaced.end()),
      "repaired_tree wants sorted rank lists");
  const bool dl4j = config.remap == "dl4j";
  for (int rank : lost)
    if (tree.is_live(rank))
      tree = dl4j ? topology::promote_child(tree, rank, limits.max_children, limits.max_depth)
                  : topology::reattach_children(tree, rank, limits.max_children, limits.max_depth);
  for (int rank : replaced)
    if (!tree.is_live(rank))
      tree = topology::attach_rank(tree, rank, limits.max_children, limits.max_depth);
  return tree;
}

}  // namespace gradshare::train
