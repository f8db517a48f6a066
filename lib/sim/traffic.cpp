#include "sim/traffic.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"
#include "train/sharing/aggregating_relay.h"

namespace gradshare::sim {

int Placement::nodes() const {
  return node.empty() ? 0 : *std::max_element(node.begin(), node.end()) + 1;
}

Placement Placement::one_per_node(int ranks) {
  Placement placement;
  for (int r = 0; r < ranks; ++r) placement.node.push_back(r);
  return placement;
}

Placement Placement::by_node(int ranks, int nodes) {
  if (nodes <= 0) return one_per_node(ranks);
  Placement placement;
  for (int r = 0; r < ranks; ++r) placement.node.push_back(r % nodes);
  return placement;
}

namespace {

// `flow` on the directed edge from -> to: the edge, both ranks, and the nodes' links when the
// ranks are on different nodes.
void carry_on_edge(Traffic& traffic, const Placement& placement, int from, int to, const Flow& flow) {
  traffic.edges.push_back({from, to, flow});
  traffic.ranks[static_cast<std::size_t>(from)].sent += flow;
  traffic.ranks[static_cast<std::size_t>(to)].received += flow;
  const int a = placement.node[static_cast<std::size_t>(from)];
  const int b = placement.node[static_cast<std::size_t>(to)];
  if (a != b) {
    traffic.nodes[static_cast<std::size_t>(a)].out += flow;
    traffic.nodes[static_cast<std::size_t>(b)].in += flow;
  }
}

}  // namespace

Traffic count_traffic(const topology::Tree& tree, const Placement& placement,
                      std::span<const Flow> published) {
  const int ranks = tree.size();
  if (static_cast<int>(published.size()) != ranks ||
      static_cast<int>(placement.node.size()) != ranks)
    throw core::RuntimeError("count_traffic: " + std::to_string(published.size()) +
                             " publishers and " + std::to_string(placement.node.size()) +
                             " placed ranks for a tree of " + std::to_string(ranks));
  // Subtree sums, children before parents: a breadth-first order read backwards.
  std::vector<int> order{0};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int child : tree.children[static_cast<std::size_t>(order[i])]) order.push_back(child);
  std::vector<Flow> subtree(static_cast<std::size_t>(ranks));
  Flow total;
  for (int r : order)
    if (tree.is_live(r)) total += published[static_cast<std::size_t>(r)];
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto& sum = subtree[static_cast<std::size_t>(*it)];
    sum += published[static_cast<std::size_t>(*it)];
    for (int child : tree.children[static_cast<std::size_t>(*it)])
      sum += subtree[static_cast<std::size_t>(child)];
  }

  Traffic traffic;
  traffic.ranks.resize(static_cast<std::size_t>(ranks));
  traffic.nodes.resize(static_cast<std::size_t>(placement.nodes()));
  const auto carry = [&](int from, int to, const Flow& flow) {
    carry_on_edge(traffic, placement, from, to, flow);
  };
  for (int r : order) {
    if (r == 0) continue;
    const int parent = tree.parent[static_cast<std::size_t>(r)];
    const Flow& up = subtree[static_cast<std::size_t>(r)];
    carry(r, parent, up);
    carry(parent, r, {total.messages - up.messages, total.bytes - up.bytes});
  }
  for (int r = 0; r < ranks; ++r) {
    if (!tree.is_live(r)) continue;
    auto& rank = traffic.ranks[static_cast<std::size_t>(r)];
    const Flow& own = published[static_cast<std::size_t>(r)];
    rank.links = static_cast<int>(tree.links(r).size());
    rank.applied = {total.messages - own.messages, total.bytes - own.bytes};
    const double forwards = std::max(rank.links - 1, 0);
    rank.relayed = {rank.received.messages * forwards, rank.received.bytes * forwards};
  }
  return traffic;
}

Traffic count_aggregated_step_traffic(const topology::Tree& tree, const Placement& placement,
                                      double per_worker_bytes, double max_message_bytes,
                                      double messages_per_link) {
  if (static_cast<int>(placement.node.size()) != tree.size())
    throw core::RuntimeError("count_aggregated_step_traffic: " +
                             std::to_string(placement.node.size()) + " placed ranks for a tree of " +
                             std::to_string(tree.size()));
  Traffic traffic;
  traffic.ranks.resize(static_cast<std::size_t>(tree.size()));
  traffic.nodes.resize(static_cast<std::size_t>(placement.nodes()));
  const auto sizes = train::subtree_sizes(tree);
  for (int r = 1; r < tree.size(); ++r) {
    if (!tree.is_live(r)) continue;
    const int parent = tree.parent[static_cast<std::size_t>(r)];
    const auto message = [&](int from, int to) {
      const double workers = train::workers_behind(tree, sizes, from, to);
      return Flow{messages_per_link,
                  messages_per_link * std::min(workers * per_worker_bytes, max_message_bytes)};
    };
    carry_on_edge(traffic, placement, r, parent, message(r, parent));
    carry_on_edge(traffic, placement, parent, r, message(parent, r));
  }
  for (int r = 0; r < tree.size(); ++r) {
    if (!tree.is_live(r)) continue;
    auto& rank = traffic.ranks[static_cast<std::size_t>(r)];
    rank.links = static_cast<int>(tree.links(r).size());
    rank.applied = rank.received;
    // A leaf's one message is its own updates; every other rank's carry others' too.
    if (r == 0 || rank.links > 1) rank.relayed = rank.sent;
  }
  return traffic;
}

Traffic count_step_traffic(const topology::Tree& tree, const Placement& placement,
                           const Flow& per_worker) {
  std::vector<Flow> published(static_cast<std::size_t>(tree.size()));
  for (int r = 1; r < tree.size(); ++r)
    if (tree.is_live(r)) published[static_cast<std::size_t>(r)] = per_worker;
  return count_traffic(tree, placement, published);
}

double per_worker_aggregate_bytes(const topology::Tree& tree, double mean_aggregate_bytes,
                                  double max_message_bytes) {
  const auto sizes = train::subtree_sizes(tree);
  std::vector<double> workers;  // per directed edge
  for (int r = 1; r < tree.size(); ++r) {
    if (!tree.is_live(r)) continue;
    const int parent = tree.parent[static_cast<std::size_t>(r)];
    workers.push_back(train::workers_behind(tree, sizes, r, parent));
    workers.push_back(train::workers_behind(tree, sizes, parent, r));
  }
  if (workers.empty()) return mean_aggregate_bytes;
  const auto mean_at = [&](double per_worker) {
    double sum = 0;
    for (const double w : workers) sum += std::min(w * per_worker, max_message_bytes);
    return sum / static_cast<double>(workers.size());
  };
  // mean_at rises with per_worker until every edge is capped; bisect below that point.
  double low = 0, high = max_message_bytes / *std::min_element(workers.begin(), workers.end());
  if (!std::isfinite(high)) {
    double total = 0;
    for (const double w : workers) total += w;
    return mean_aggregate_bytes * static_cast<double>(workers.size()) / total;
  }
  if (mean_at(high) <= mean_aggregate_bytes) return high;
  for (int i = 0; i < 200; ++i) {
    const double middle = (low + high) / 2;
    (mean_at(middle) < mean_aggregate_bytes ? low : high) = middle;
  }
  return (low + high) / 2;
}

}  // namespace gradshare::sim
