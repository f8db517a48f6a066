// tree_test.cpp: plain and mesh trees, their limits, repair after a dead rank, mode and render.
#include "topology/tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <string>

#include "core/errors.h"
#include "topology/mode.h"
#include "topology/render.h"

namespace gradshare::topology {
namespace {

// Structural invariants every tree must keep: parent/children agree, each live non-root rank has
// exactly one parent, every live rank is reachable from the master, links are symmetric, and the
// limits hold. Returns the number of live ranks.
int check_tree(const Tree& tree, int max_children, int max_depth) {
  EXPECT_EQ(tree.parent.size(), tree.children.size());
  EXPECT_EQ(tree.parent[0], -1);
  std::vector<int> times_child(tree.parent.size(), 0);
  for (int rank = 0; rank < tree.size(); ++rank) {
    EXPECT_LE(static_cast<int>(tree.children[rank].size()), max_children) << "rank " << rank;
    EXPECT_TRUE(std::is_sorted(tree.children[rank].begin(), tree.children[rank].end()));
    for (int child : tree.children[rank]) {
      ++times_child[child];
      EXPECT_EQ(tree.parent[child], rank) << "child " << child;
    }
  }
  int live = 0;
  for (int rank = 0; rank < tree.size(); ++rank) {
    if (!tree.is_live(rank)) {
      EXPECT_EQ(times_child[rank], 0) << "removed rank " << rank << " still linked";
      EXPECT_TRUE(tree.children[rank].empty()) << "removed rank " << rank;
      EXPECT_TRUE(tree.links(rank).empty());
      EXPECT_EQ(tree.depth(rank), -1);
      continue;
    }
    ++live;
    EXPECT_EQ(times_child[rank], rank == 0 ? 0 : 1) << "rank " << rank;
    EXPECT_LE(tree.depth(rank), max_depth) << "rank " << rank;
    for (int link : tree.links(rank)) {
      auto back = tree.links(link);
      EXPECT_NE(std::find(back.begin(), back.end(), rank), back.end())
          << rank << " -> " << link << " is not symmetric";
    }
  }
  // Connectivity: a walk over links from the master reaches every live rank.
  std::set<int> seen{0};
  std::deque<int> queue{0};
  while (!queue.empty()) {
    int rank = queue.front();
    queue.pop_front();
    for (int link : tree.links(rank))
      if (seen.insert(link).second) queue.push_back(link);
  }
  EXPECT_EQ(static_cast<int>(seen.size()), live);
  return live;
}

TEST(Plain, IsAStar) {
  Tree tree = build_plain(5);
  EXPECT_EQ(check_tree(tree, 4, 1), 5);
  EXPECT_EQ(tree.links(0), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(tree.links(3), (std::vector<int>{0}));
  EXPECT_EQ(tree.max_depth(), 1);
}

TEST(Plain, OneWorkerAndMasterOnly) {
  Tree tree = build_plain(2);
  EXPECT_EQ(tree.links(1), (std::vector<int>{0}));
  Tree alone = build_plain(1);
  EXPECT_TRUE(alone.links(0).empty());
  EXPECT_EQ(alone.max_depth(), 0);
  EXPECT_THROW(build_plain(0), core::UserError);
}

TEST(Mesh, FillsBreadthFirst) {
  Tree tree = build_mesh(7, 2, 5);
  check_tree(tree, 2, 5);
  EXPECT_EQ(tree.children[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(tree.children[1], (std::vector<int>{3, 4}));
  EXPECT_EQ(tree.children[2], (std::vector<int>{5, 6}));
  EXPECT_EQ(tree.links(1), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(tree.depth(6), 2);
  EXPECT_EQ(tree.max_depth(), 2);
}

TEST(Mesh, OneWorker) {
  Tree tree = build_mesh(2, 8, 5);
  EXPECT_EQ(check_tree(tree, 8, 5), 2);
  EXPECT_EQ(tree.links(1), (std::vector<int>{0}));
}

TEST(Mesh, ThousandWorkersWithDefaults) {
  Tree tree = build_mesh(1001, 8, 5);
  EXPECT_EQ(check_tree(tree, 8, 5), 1001);
  EXPECT_EQ(tree.children[0].size(), 8u);
  // 1 + 8 + 64 + 512 = 585 < 1001 <= 585 + 4096: the last workers sit at level 4.
  EXPECT_EQ(tree.max_depth(), 4);
}

TEST(Mesh, ExactlyFullAndOneTooMany) {
  EXPECT_EQ(mesh_capacity(2, 3), 15);
  EXPECT_EQ(mesh_capacity(8, 5), 37449);
  Tree full = build_mesh(15, 2, 3);
  EXPECT_EQ(check_tree(full, 2, 3), 15);
  EXPECT_EQ(full.max_depth(), 3);
  try {
    build_mesh(16, 2, 3);
    FAIL() << "16 ranks fit a mesh of capacity 15";
  } catch (const core::UserError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("topology.max_children = 2"), std::string::npos) << what;
    EXPECT_NE(what.find("topology.max_depth = 3"), std::string::npos) << what;
    EXPECT_NE(what.find("at most 15"), std::string::npos) << what;
  }
}

TEST(Mesh, FanOutOneIsAChain) {
  Tree tree = build_mesh(4, 1, 3);
  check_tree(tree, 1, 3);
  EXPECT_EQ(tree.links(2), (std::vector<int>{1, 3}));
  EXPECT_THROW(build_mesh(5, 1, 3), core::UserError);
}

TEST(Mesh, CapacitySaturatesInsteadOfOverflowing) {
  EXPECT_GT(mesh_capacity(1024, 64), 1000000);
  EXPECT_EQ(mesh_capacity(1, 64), 65);
  EXPECT_THROW(build_mesh(3, 0, 5), core::UserError);
  EXPECT_THROW(build_mesh(3, 2, 0), core::UserError);
}

TEST(Reattach, LeafRemoval) {
  Tree tree = build_mesh(7, 2, 5);
  Tree repaired = reattach_children(tree, 6, 2, 5);
  EXPECT_EQ(repaired.version, tree.version + 1);
  EXPECT_EQ(check_tree(repaired, 2, 5), 6);
  EXPECT_EQ(repaired.children[2], (std::vector<int>{5}));
}

TEST(Reattach, InnerNodeChildrenMoveUp) {
  Tree tree = build_mesh(7, 2, 5);
  Tree repaired = reattach_children(tree, 1, 2, 5);
  EXPECT_EQ(check_tree(repaired, 2, 5), 6);
  // The master lost child 1, so the first orphan (3) takes its slot; 4 goes to the shallowest
  // node with room that is left.
  EXPECT_EQ(repaired.parent[3], 0);
  EXPECT_EQ(repaired.depth(4), 2);
  EXPECT_TRUE(repaired.links(1).empty());
}

TEST(Reattach, TightLimitsDissolveTallSubtrees) {
  // Full binary tree of depth 3: removing 1 leaves 14 ranks, its subtrees (3: 7,8 and 4: 9,10)
  // are 1 level tall; only slot 0 is free at depth 1, so the second subtree must be split.
  Tree tree = build_mesh(15, 2, 3);
  Tree repaired = reattach_children(tree, 1, 2, 3);
  EXPECT_EQ(check_tree(repaired, 2, 3), 14);
  EXPECT_EQ(repaired.parent[3], 0);  // the first subtree moved up whole
  EXPECT_EQ(repaired.parent[4], 7);  // the second was dissolved into the free leaf slots
  EXPECT_EQ(repaired.parent[9], 8);
  EXPECT_EQ(repaired.parent[10], 7);
}

TEST(Reattach, RepeatedFailuresKeepTheTreeValid) {
  for (int fan_out : {1, 2, 3, 8}) {
    int depth_limit = fan_out == 1 ? 40 : 6;
    int ranks = fan_out == 1 ? 41 : 40;
    Tree tree = build_mesh(ranks, fan_out, depth_limit);
    // Kill ranks in an order mixing inner nodes and leaves.
    int live = ranks;
    for (int step = 0; step < ranks - 2; ++step) {
      int victim = 1 + (step * 17) % (ranks - 1);
      while (!tree.is_live(victim)) victim = 1 + victim % (ranks - 1);
      tree = reattach_children(tree, victim, fan_out, depth_limit);
      --live;
      ASSERT_EQ(check_tree(tree, fan_out, depth_limit), live) << "fan-out " << fan_out;
      ASSERT_EQ(tree.version, step + 1);
    }
  }
}

TEST(Reattach, RejectsMasterAndRemovedRanks) {
  Tree tree = build_mesh(5, 2, 5);
  EXPECT_THROW(reattach_children(tree, 0, 2, 5), core::RuntimeError);
  Tree repaired = reattach_children(tree, 2, 2, 5);
  EXPECT_THROW(reattach_children(repaired, 2, 2, 5), core::RuntimeError);
  EXPECT_THROW(reattach_children(tree, 9, 2, 5), core::RuntimeError);
}

TEST(Reattach, ReplacementRankRejoinsAsLeaf) {
  Tree tree = reattach_children(build_mesh(7, 2, 5), 1, 2, 5);
  Tree rejoined = attach_rank(tree, 1, 2, 5);
  EXPECT_EQ(rejoined.version, tree.version + 1);
  EXPECT_EQ(check_tree(rejoined, 2, 5), 7);
  EXPECT_TRUE(rejoined.children[1].empty());
  EXPECT_THROW(attach_rank(rejoined, 1, 2, 5), core::RuntimeError);
}

// Deeplearning4j's remap: the dead rank's lowest child moves up to the master with its subtree,
// its siblings go under it.
TEST(PromoteChild, HeirMovesUpToTheMasterSiblingsUnderIt) {
  // Fan-out 3: 0 -> {1, 2, 3}; 1 -> {4, 5, 6}; 2 -> {7, 8}. Rank 1 dies: 4 takes its slot under
  // the master, 5 and 6 go under 4.
  Tree tree = build_mesh(9, 3, 5);
  Tree repaired = promote_child(tree, 1, 3, 5);
  EXPECT_EQ(repaired.version, tree.version + 1);
  EXPECT_EQ(check_tree(repaired, 3, 5), 8);
  EXPECT_EQ(repaired.children[0], (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(repaired.children[4], (std::vector<int>{5, 6}));
  EXPECT_EQ(parent_changes(tree, repaired), "rank 4 -> 0, rank 5 -> 4, rank 6 -> 4");
  // The shallowest rule spreads them instead: 4 to the master, 5 and 6 to the shallowest nodes
  // with the fewest children (3, then 4).
  Tree shallowest = reattach_children(tree, 1, 3, 5);
  EXPECT_EQ(parent_changes(tree, shallowest), "rank 4 -> 0, rank 5 -> 3, rank 6 -> 4");
}

TEST(PromoteChild, SiblingsThatDoNotFitUnderTheHeirGoToTheShallowestNode) {
  // Fan-out 2: 0 -> {1, 2}; 1 -> {3, 4}; 2 -> {5, 6}; 3 -> {7, 8}. Rank 1 dies: 3 moves up with
  // its subtree; it has no room for 4, which goes to the shallowest node with room (5).
  Tree tree = build_mesh(9, 2, 5);
  Tree repaired = promote_child(tree, 1, 2, 5);
  EXPECT_EQ(check_tree(repaired, 2, 5), 8);
  EXPECT_EQ(repaired.children[0], (std::vector<int>{2, 3}));
  EXPECT_EQ(repaired.children[3], (std::vector<int>{7, 8}));
  EXPECT_EQ(repaired.parent[4], 5);
}

TEST(PromoteChild, FullMasterLeavesTheHeirUnderTheDeadRanksParent) {
  // Fan-out 2, depth 3: 0 -> {1, 2}, 1 -> {3, 4}, 3 -> {7, 8}, 4 -> {9, 10}. Rank 3 dies: the
  // master is full, so the heir 7 takes 3's slot under 1, and 8 goes under 7.
  Tree tree = build_mesh(11, 2, 3);
  Tree repaired = promote_child(tree, 3, 2, 3);
  EXPECT_EQ(check_tree(repaired, 2, 3), 10);
  EXPECT_EQ(repaired.parent[7], 1);
  EXPECT_EQ(repaired.parent[8], 7);
  EXPECT_EQ(parent_changes(tree, repaired), "rank 7 -> 1, rank 8 -> 7");
}

TEST(PromoteChild, LeafAndRepeatedFailuresKeepTheTreeValid) {
  Tree tree = build_mesh(7, 2, 5);
  Tree leaf = promote_child(tree, 6, 2, 5);
  EXPECT_EQ(check_tree(leaf, 2, 5), 6);
  EXPECT_EQ(parent_changes(tree, leaf), "none");
  Tree repaired = build_mesh(40, 3, 4);
  for (int victim : {1, 4, 2, 13, 5, 3}) {
    repaired = promote_child(repaired, victim, 3, 4);
    check_tree(repaired, 3, 4);
  }
  EXPECT_EQ(check_tree(repaired, 3, 4), 34);
  EXPECT_THROW(promote_child(repaired, 0, 3, 4), core::RuntimeError);
  EXPECT_THROW(promote_child(repaired, 4, 3, 4), core::RuntimeError);
  EXPECT_THROW(promote_child(repaired, 99, 3, 4), core::RuntimeError);
}

TEST(Mode, AutoSwitchesAtTheThreshold) {
  config::TopologyConfig config;
  config.mode = "auto";
  config.mesh_from_workers = 32;
  EXPECT_EQ(resolve_mode(config, 31), Mode::kPlain);
  EXPECT_EQ(resolve_mode(config, 32), Mode::kMesh);
  config.mode = "plain";
  EXPECT_EQ(resolve_mode(config, 1000), Mode::kPlain);
  config.mode = "ring";
  EXPECT_THROW(resolve_mode(config, 4), core::UserError);
}

TEST(Mode, BuildTreeFollowsTheConfig) {
  config::TopologyConfig config;
  config.mode = "mesh";
  config.max_children = 2;
  Tree tree = build_tree(config, 7);
  EXPECT_EQ(tree.max_depth(), 2);
  config.mode = "auto";
  EXPECT_EQ(build_tree(config, 7).max_depth(), 1);
}

TEST(Render, DrawsTheTree) {
  std::string text = render(build_mesh(5, 2, 5));
  EXPECT_EQ(text,
            "5 ranks (1 master, 4 workers), tree version 0, depth 2, widest fan-out 2\n"
            "0 (master)\n"
            "+-- 1\n"
            "|   +-- 3\n"
            "|   `-- 4\n"
            "`-- 2\n");
}

TEST(Render, LeavesRemovedRanksOut) {
  std::string text = render(reattach_children(build_plain(3), 1, 8, 5));
  EXPECT_EQ(text,
            "2 ranks (1 master, 1 worker), tree version 1, depth 1, widest fan-out 1\n"
            "0 (master)\n"
            "`-- 2\n");
}

}  // namespace
}  // namespace gradshare::topology
