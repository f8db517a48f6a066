// traffic.h: what gradient sharing puts on every link and every rank of a tree, counted exactly
// from the tree (the simulator's flow model).
//
// Each worker publishes messages; a message floods the tree: every rank applies it once and
// forwards a copy to each of its links but the one it came from. So the directed edge u -> v
// carries every message published on u's side of the edge: up (child -> parent) the messages of
// the child's subtree, down (parent -> child) all the others. For a rank with L links that
// receives m messages and publishes o of its own, the copies it sends are m * (L - 1) + o * L:
// relayed (m * (L - 1)) plus its own. Placement puts ranks on nodes; an edge between two ranks
// of one node uses memory, not the node's network link.
#pragma once

#include <span>
#include <vector>

#include "topology/tree.h"

namespace gradshare::sim {

// node[rank]: the node a rank runs on.
struct Placement {
  std::vector<int> node;

  int nodes() const;
  // A node per rank (a real cluster with one rank per node).
  static Placement one_per_node(int ranks);
  // mpirun --map-by node over `nodes` nodes: rank r on node r % nodes; 0 nodes: one_per_node.
  static Placement by_node(int ranks, int nodes);
};

struct Flow {
  double messages = 0;
  double bytes = 0;
  Flow& operator+=(const Flow& other) {
    messages += other.messages;
    bytes += other.bytes;
    return *this;
  }
};

struct RankTraffic {
  int links = 0;
  Flow applied;   // peer messages applied here (own ones not counted)
  Flow relayed;   // copies of peer messages forwarded
  Flow sent;      // every copy handed to a link (relayed and own)
  Flow received;  // every message that arrived on a link
};

struct NodeTraffic {
  Flow out;  // to other nodes (its network link's outbound direction)
  Flow in;   // from other nodes
};

struct DirectedEdge {
  int from = 0;
  int to = 0;
  Flow flow;
};

struct Traffic {
  std::vector<RankTraffic> ranks;
  std::vector<NodeTraffic> nodes;
  std::vector<DirectedEdge> edges;  // both directions of every tree edge
};

// published[r]: what rank r publishes (rank 0, the master, nothing). Dead ranks of the tree carry
// nothing. Throws core::RuntimeError when the sizes disagree.
Traffic count_traffic(const topology::Tree& tree, const Placement& placement,
                      std::span<const Flow> published);

// Every live worker publishes `per_worker` (one step of a run where all workers train).
Traffic count_step_traffic(const topology::Tree& tree, const Placement& placement,
                           const Flow& per_worker);

// The aggregating mesh (train/sharing/aggregating_relay.h): each rank sends each of its links
// `messages_per_link` messages per step for everything it owes it, and applies as many per link.
// A message carries what every worker on its sender's side of the link gave it
// (train::workers_behind), so a message from a to b is `per_worker_bytes` times that many (no
// overlap counted), up to `max_message_bytes` (the link's cap: topology.aggregate_band workers'
// message caps). A leaf's messages are its own update; every other rank's count as relayed.
Traffic count_aggregated_step_traffic(const topology::Tree& tree, const Placement& placement,
                                      double per_worker_bytes, double max_message_bytes,
                                      double messages_per_link = 1.0);

// The per_worker_bytes above for which the mean aggregate over the directed edges of `tree`
// is `mean_aggregate_bytes`, each edge's capped at `max_message_bytes` (what a measured run's
// aggregates give: those of the links that carry more workers than their cap are capped).
double per_worker_aggregate_bytes(const topology::Tree& tree, double mean_aggregate_bytes,
                                  double max_message_bytes);

}  // namespace gradshare::sim
