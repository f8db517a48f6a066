// tree.cpp: building and repairing the communication tree.
#include "topology/tree.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <string>

#include "core/errors.h"

namespace gradshare::topology {
namespace {

void check_rank(const Tree& tree, int rank) {
  GS_CHECK(rank >= 0 && rank < tree.size(),
           "rank " + std::to_string(rank) + " outside a tree of " + std::to_string(tree.size()));
}

void check_limits(int max_children, int max_depth) {
  if (max_children < 1)
    throw core::UserError("topology.max_children must be at least 1, got " +
                          std::to_string(max_children));
  if (max_depth < 1)
    throw core::UserError("topology.max_depth must be at least 1, got " +
                          std::to_string(max_depth));
}

Tree empty_tree(int ranks) {
  if (ranks < 1) throw core::UserError("a job needs at least 1 rank, got " + std::to_string(ranks));
  Tree tree;
  tree.parent.assign(static_cast<std::size_t>(ranks), -1);
  tree.children.resize(static_cast<std::size_t>(ranks));
  return tree;
}

void link_child(Tree& tree, int parent, int child) {
  tree.parent[child] = parent;
  auto& siblings = tree.children[parent];
  siblings.insert(std::upper_bound(siblings.begin(), siblings.end(), child), child);
}

// Depth of every rank attached to the master (-1 for ranks not reachable from it).
std::vector<int> attached_depths(const Tree& tree) {
  std::vector<int> depth(tree.parent.size(), -1);
  std::deque<int> queue{0};
  depth[0] = 0;
  while (!queue.empty()) {
    int rank = queue.front();
    queue.pop_front();
    for (int child : tree.children[rank]) {
      if (depth[child] >= 0) continue;  // defensive: a malformed tree must not loop forever
      depth[child] = depth[rank] + 1;
      queue.push_back(child);
    }
  }
  return depth;
}

// Levels below `root` within its subtree (a leaf has height 0).
int subtree_height(const Tree& tree, int root) {
  int height = 0;
  std::deque<std::pair<int, int>> queue{{root, 0}};
  while (!queue.empty()) {
    auto [rank, level] = queue.front();
    queue.pop_front();
    height = std::max(height, level);
    for (int child : tree.children[rank]) queue.emplace_back(child, level + 1);
  }
  return height;
}

// The attached node that can take a child whose subtree is `height` levels tall: shallowest
// first, then fewest children, then lowest rank. -1 when none can.
int find_host(const Tree& tree, int height, int max_children, int max_depth) {
  std::vector<int> depth = attached_depths(tree);
  int best = -1;
  for (int rank = 0; rank < tree.size(); ++rank) {
    if (depth[rank] < 0) continue;
    if (static_cast<int>(tree.children[rank].size()) >= max_children) continue;
    if (depth[rank] + 1 + height > max_depth) continue;
    if (best < 0 || depth[rank] < depth[best] ||
        (depth[rank] == depth[best] && tree.children[rank].size() < tree.children[best].size()))
      best = rank;
  }
  return best;
}

void attach_leaf(Tree& tree, int rank, int max_children, int max_depth) {
  int host = find_host(tree, 0, max_children, max_depth);
  if (host < 0)
    throw core::RuntimeError("topology: no room to attach rank " + std::to_string(rank) +
                             " within max_children = " + std::to_string(max_children) +
                             " and max_depth = " + std::to_string(max_depth));
  link_child(tree, host, rank);
}

// Hangs `orphan`'s subtree under `preferred` if it fits there (preferred < 0: no preference),
// else under the shallowest node with room; a subtree too tall to hang anywhere whole is
// dissolved and its ranks inserted one by one, breadth-first, so each lands as shallow as the
// tree allows.
void attach_subtree(Tree& tree, int orphan, int preferred, int max_children, int max_depth) {
  const int height = subtree_height(tree, orphan);
  if (preferred >= 0 && static_cast<int>(tree.children[preferred].size()) < max_children &&
      tree.depth(preferred) + 1 + height <= max_depth) {
    link_child(tree, preferred, orphan);
    return;
  }
  const int host = find_host(tree, height, max_children, max_depth);
  if (host >= 0) {
    link_child(tree, host, orphan);
    return;
  }
  std::vector<int> members{orphan};
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& kids = tree.children[members[i]];
    members.insert(members.end(), kids.begin(), kids.end());
  }
  for (int member : members) {
    tree.parent[member] = -1;
    tree.children[member].clear();
  }
  for (int member : members) attach_leaf(tree, member, max_children, max_depth);
}

// Takes dead_rank out of `tree`; returns its children, detached (their subtrees intact).
std::vector<int> remove_rank(Tree& tree, int dead_rank, int max_children, int max_depth) {
  check_limits(max_children, max_depth);
  check_rank(tree, dead_rank);
  if (dead_rank == 0)
    throw core::RuntimeError("topology: the master (rank 0) cannot be removed from the tree");
  if (!tree.is_live(dead_rank))
    throw core::RuntimeError("topology: rank " + std::to_string(dead_rank) +
                             " is not in the tree (already removed)");
  std::vector<int> orphans = tree.children[dead_rank];
  auto& siblings = tree.children[tree.parent[dead_rank]];
  siblings.erase(std::find(siblings.begin(), siblings.end(), dead_rank));
  tree.parent[dead_rank] = -1;
  tree.children[dead_rank].clear();
  for (int orphan : orphans) tree.parent[orphan] = -1;
  return orphans;
}

}  // namespace

bool Tree::is_live(int rank) const {
  check_rank(*this, rank);
  return rank == 0 || parent[rank] >= 0;
}

std::vector<int> Tree::links(int rank) const {
  check_rank(*this, rank);
  std::vector<int> result;
  if (parent[rank] >= 0) result.push_back(parent[rank]);
  result.insert(result.end(), children[rank].begin(), children[rank].end());
  return result;
}

int Tree::depth(int rank) const {
  check_rank(*this, rank);
  int level = 0;
  for (int at = rank; at != 0; at = parent[at]) {
    if (parent[at] < 0) return -1;
    ++level;
    GS_CHECK(level < size(), "the tree has a cycle through rank " + std::to_string(rank));
  }
  return level;
}

int Tree::max_depth() const {
  int deepest = 0;
  for (int rank = 0; rank < size(); ++rank) deepest = std::max(deepest, depth(rank));
  return deepest;
}

Tree build_plain(int ranks) {
  Tree tree = empty_tree(ranks);
  for (int rank = 1; rank < ranks; ++rank) link_child(tree, 0, rank);
  return tree;
}

long long mesh_capacity(int max_children, int max_depth) {
  constexpr long long kSaturated = std::numeric_limits<int>::max();
  long long total = 1;
  long long level = 1;
  for (int d = 1; d <= max_depth && total < kSaturated; ++d) {
    level = std::min(level * max_children, kSaturated);
    total = std::min(total + level, kSaturated);
  }
  return total;
}

Tree build_mesh(int ranks, int max_children, int max_depth) {
  check_limits(max_children, max_depth);
  long long capacity = mesh_capacity(max_children, max_depth);
  if (ranks > capacity)
    throw core::UserError(
        "topology: " + std::to_string(ranks) +
        " ranks do not fit a mesh with topology.max_children = " + std::to_string(max_children) +
        " and topology.max_depth = " + std::to_string(max_depth) + " (at most " +
        std::to_string(capacity) + " ranks); raise one of them");
  Tree tree = empty_tree(ranks);
  for (int rank = 1; rank < ranks; ++rank) link_child(tree, (rank - 1) / max_children, rank);
  return tree;
}

Tree reattach_children(const Tree& tree, int dead_rank, int max_children, int max_depth) {
  Tree out = tree;
  for (int orphan : remove_rank(out, dead_rank, max_children, max_depth))
    attach_subtree(out, orphan, -1, max_children, max_depth);
  ++out.version;
  return out;
}

Tree promote_child(const Tree& tree, int dead_rank, int max_children, int max_depth) {
  check_rank(tree, dead_rank);
  Tree out = tree;
  const int old_parent = tree.parent[dead_rank];
  const auto orphans = remove_rank(out, dead_rank, max_children, max_depth);
  if (!orphans.empty()) {
    const int heir = orphans.front();
    // The dead rank's slot under its parent is free, and the heir's subtree fits where the
    // dead rank's did: a fallback that always has room.
    const bool master_has_room = static_cast<int>(out.children[0].size()) < max_children &&
                                 1 + subtree_height(out, heir) <= max_depth;
    link_child(out, master_has_room ? 0 : old_parent, heir);
    for (std::size_t i = 1; i < orphans.size(); ++i)
      attach_subtree(out, orphans[i], heir, max_children, max_depth);
  }
  ++out.version;
  return out;
}

std::string parent_changes(const Tree& before, const Tree& after) {
  std::string text;
  for (int rank = 1; rank < after.size() && rank < before.size(); ++rank) {
    if (before.parent[rank] == after.parent[rank] || after.parent[rank] < 0) continue;
    text += (text.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " -> " +
            std::to_string(after.parent[rank]);
  }
  return text.empty() ? "none" : text;
}

Tree attach_rank(const Tree& tree, int rank, int max_children, int max_depth) {
  check_limits(max_children, max_depth);
  check_rank(tree, rank);
  if (tree.is_live(rank) || !tree.children[rank].empty())
    throw core::RuntimeError("topology: rank " + std::to_string(rank) +
                             " is already in the tree; only a removed rank can be attached");
  Tree out = tree;
  attach_leaf(out, rank, max_children, max_depth);
  ++out.version;
  return out;
}

}  // namespace gradshare::topology
