// tree.h: the communication tree of a job (rank 0 = master = root, ranks 1..n-1 workers) and the
// pure functions that build it (plain star, breadth-first mesh) and repair it when a rank dies.
// Nothing here knows MPI or training: every rank computes the same tree from the same inputs.
#pragma once

#include <string>
#include <vector>

namespace gradshare::topology {

struct Tree {
  std::vector<int> parent;  // parent[0] = -1; a removed (dead) rank also has -1 and no children
  std::vector<std::vector<int>> children;
  int version = 0;  // +1 on every repair, so ranks can tell which tree a message was routed on

  int size() const { return static_cast<int>(parent.size()); }
  // Rank 0 and every rank that has a parent; a removed rank is not live.
  bool is_live(int rank) const;
  // Neighbours of `rank`: its parent (if any) followed by its children, ascending.
  std::vector<int> links(int rank) const;
  // Levels below the master (master = 0); -1 for a removed rank.
  int depth(int rank) const;
  int max_depth() const;
};

// A star: every worker's parent is the master.
Tree build_plain(int ranks);

// A tree filled breadth-first (rank r's parent is (r - 1) / max_children) with at most
// max_children children per node and at most max_depth levels below the master.
// Throws UserError naming topology.max_children / topology.max_depth when the ranks do not fit.
Tree build_mesh(int ranks, int max_children, int max_depth);

// Most ranks a mesh with these limits holds (saturates at a large value instead of overflowing).
long long mesh_capacity(int max_children, int max_depth);

// Removes dead_rank (it keeps no links) and re-attaches its children's subtrees to the shallowest
// live nodes with room (fewest children first, then lowest rank), keeping both limits; a subtree
// too tall to fit anywhere whole is re-inserted node by node. Returns the tree with version + 1.
// Deterministic, so all survivors compute the same tree. The master cannot be removed.
Tree reattach_children(const Tree& tree, int dead_rank, int max_children, int max_depth);

// Deeplearning4j's repair (topology.remap: dl4j): removes dead_rank; its lowest child, the heir,
// moves up with its subtree to the master (the most reliable node) where the master has room,
// else to dead_rank's parent, and dead_rank's other children go under the heir. A child that
// does not fit there within the limits goes where reattach_children would put it. Version + 1.
Tree promote_child(const Tree& tree, int dead_rank, int max_children, int max_depth);

// "rank 3 -> 0, rank 4 -> 3": the ranks whose parent differs between two versions of a tree
// ("none" when no parent changed).
std::string parent_changes(const Tree& before, const Tree& after);

// Puts a removed rank (e.g. its replacement after a failure) back as a leaf under the shallowest
// live node with room; version + 1.
Tree attach_rank(const Tree& tree, int rank, int max_children, int max_depth);

}  // namespace gradshare::topology
