// traffic_test.cpp: the flow model's counts against what the trees imply, rates, projections.
#include "sim/traffic.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/errors.h"
#include "sim/link_model.h"
#include "sim/projection.h"

namespace gradshare::sim {
namespace {

TEST(LinkModel, ParsesTcRates) {
  EXPECT_DOUBLE_EQ(parse_rate("1gbit", "--link"), 1e9);
  EXPECT_DOUBLE_EQ(parse_rate("100mbit", "--link"), 1e8);
  EXPECT_DOUBLE_EQ(parse_rate("2.5gbit", "--link"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_rate("unlimited", "--link"), 0.0);
  EXPECT_EQ(rate_name(1e9), "1gbit");
  for (const char* bad : {"", "fast", "1gb", "-1gbit", "0mbit"}) {
    try {
      parse_rate(bad, "--link");
      FAIL() << bad;
    } catch (const core::UserError& error) {
      EXPECT_NE(std::string(error.what()).find("--link"), std::string::npos);
    }
  }
  const LinkModel link{8e6, 0.0, 0.0};  // a byte per microsecond
  EXPECT_NEAR(link.seconds(1000, 1), 1e-3, 1e-12);
}

TEST(Traffic, StarRelaysEveryMessageToEveryOtherWorker) {
  const auto tree = topology::build_plain(5);
  const auto traffic = count_step_traffic(tree, Placement::one_per_node(5), {1, 100});
  const auto& master = traffic.ranks[0];
  EXPECT_EQ(master.links, 4);
  EXPECT_DOUBLE_EQ(master.received.messages, 4);
  EXPECT_DOUBLE_EQ(master.applied.messages, 4);
  EXPECT_DOUBLE_EQ(master.relayed.messages, 12);
  EXPECT_DOUBLE_EQ(master.sent.messages, 12);
  EXPECT_DOUBLE_EQ(master.sent.bytes, 1200);
  for (int w = 1; w < 5; ++w) {
    EXPECT_DOUBLE_EQ(traffic.ranks[w].sent.messages, 1);
    EXPECT_DOUBLE_EQ(traffic.ranks[w].received.messages, 3);
    EXPECT_DOUBLE_EQ(traffic.ranks[w].relayed.messages, 0);
  }
  EXPECT_DOUBLE_EQ(traffic.nodes[0].out.bytes, 1200);
  EXPECT_DOUBLE_EQ(traffic.nodes[0].in.bytes, 400);
}

// In any tree each rank applies every other worker's message once, relays it to its other links,
// and the two directions of an edge carry all messages between them.
TEST(Traffic, MeshCountsFollowTheRelayFormula) {
  for (int children : {2, 4, 8}) {
    const auto tree = topology::build_mesh(65, children, 10);
    const auto traffic = count_step_traffic(tree, Placement::one_per_node(65), {1, 10});
    double copies = 0;
    for (int r = 0; r < 65; ++r) {
      const auto& rank = traffic.ranks[r];
      const double own = r == 0 ? 0 : 1;
      EXPECT_DOUBLE_EQ(rank.applied.messages, 64 - own) << r;
      EXPECT_DOUBLE_EQ(rank.received.messages, 64 - own) << r;
      EXPECT_DOUBLE_EQ(rank.relayed.messages, (64 - own) * (rank.links - 1)) << r;
      EXPECT_DOUBLE_EQ(rank.sent.messages, rank.relayed.messages + own * rank.links) << r;
      copies += rank.sent.messages;
    }
    // 64 messages, each delivered once to each of the other 64 ranks.
    EXPECT_DOUBLE_EQ(copies, 64.0 * 64.0);
    for (std::size_t e = 0; e < traffic.edges.size(); e += 2)
      EXPECT_DOUBLE_EQ(traffic.edges[e].flow.messages + traffic.edges[e + 1].flow.messages, 64);
  }
}

TEST(Traffic, RanksOfOneNodeDoNotUseItsLink) {
  EXPECT_EQ(Placement::by_node(5, 0).node, Placement::one_per_node(5).node);  // 0: no --nodes
  const auto tree = topology::build_plain(5);
  // By node over 4 nodes: the master and worker 4 share node 0.
  const auto traffic = count_step_traffic(tree, Placement::by_node(5, 4), {1, 100});
  EXPECT_DOUBLE_EQ(traffic.nodes[0].out.messages, 9);  // to workers 1..3, 3 messages each
  EXPECT_DOUBLE_EQ(traffic.nodes[0].in.messages, 3);
  EXPECT_DOUBLE_EQ(traffic.nodes[1].in.messages, 3);
}

TEST(Traffic, PublishedSizesMustMatchTheTree) {
  std::vector<Flow> published(3);
  EXPECT_THROW(count_traffic(topology::build_plain(4), Placement::one_per_node(4), published),
               core::RuntimeError);
}

TEST(Projection, StarSaturatesOnTheMasterAndMeshSpreadsTheRelays) {
  const StepCosts costs{2e-3, 2e-4, 1000, 1e-6, 5e-7};
  const LinkModel link{1e9};
  const auto small = project(topology::build_plain(9), Placement::one_per_node(9), costs, link, 0);
  EXPECT_EQ(small.bottleneck, "compute");
  EXPECT_NEAR(small.efficiency, 1.0, 0.01);  // 8 applies of 1 us beside 2.2 ms
  const auto star =
      project(topology::build_plain(1025), Placement::one_per_node(1025), costs, link, 0);
  const auto mesh =
      project(topology::build_mesh(1025, 8, 10), Placement::one_per_node(1025), costs, link, 0);
  EXPECT_DOUBLE_EQ(star.master_copies, 1024.0 * 1023.0);
  EXPECT_LT(mesh.master_copies, 8.0 * 1024.0);
  EXPECT_GT(star.step_seconds, mesh.step_seconds);
  // 1024 x 1023 messages of 1 kB leave the master's node each step: 8.4 s at 1 Gbit/s.
  EXPECT_EQ(star.bottleneck, "master's node link, outbound");
  EXPECT_NEAR(star.step_seconds, link.seconds(1024.0 * 1023.0 * 1000, 1024.0 * 1023.0), 1e-9);
  const auto fast =
      project(topology::build_plain(1025), Placement::one_per_node(1025), costs, LinkModel{}, 0);
  EXPECT_EQ(fast.bottleneck, "master CPU (relaying)");
  // Every leaf receives the other workers' messages, whatever the tree.
  EXPECT_DOUBLE_EQ(mesh.leaf_in_bytes, 1023.0 * 1000);
  // Shared cores: 9 ranks on 2 cores cannot be faster than their CPU over 2.
  const auto shared = project(topology::build_plain(9), Placement::one_per_node(9), costs, link, 2);
  EXPECT_EQ(shared.bottleneck, "shared cores");
  EXPECT_GT(shared.step_seconds, 4 * (2e-3 + 2e-4));
}

// The aggregating mesh: one message per directed edge per step, whatever the worker count, as
// large as the workers it carries (every one behind its sender) up to the densest message.
TEST(Traffic, AggregatingMeshCarriesOneMessagePerEdge) {
  const auto tree = topology::build_mesh(65, 8, 10);
  const auto traffic = count_aggregated_step_traffic(tree, Placement::one_per_node(65), 10, 75);
  ASSERT_EQ(traffic.edges.size(), 128u);
  for (const auto& edge : traffic.edges) {
    EXPECT_DOUBLE_EQ(edge.flow.messages, 1);
    // Worker 9 is a leaf under 1, whose subtree has 9 workers; what 1 sends up carries them (90
    // bytes, capped at 75), what it sends 9 the 63 others (the same).
    if (edge.from == 9 && edge.to == 1) {
      EXPECT_DOUBLE_EQ(edge.flow.bytes, 10);
    }
    if (edge.from == 10 && edge.to == 1) {
      EXPECT_DOUBLE_EQ(edge.flow.bytes, 10);
    }
    if (edge.from == 1 && edge.to == 0) {
      EXPECT_DOUBLE_EQ(edge.flow.bytes, 75);
    }
    if (edge.from == 1 && edge.to == 9) {
      EXPECT_DOUBLE_EQ(edge.flow.bytes, 75);
    }
  }
  for (int r = 0; r < 65; ++r) {
    const auto& rank = traffic.ranks[static_cast<std::size_t>(r)];
    EXPECT_DOUBLE_EQ(rank.applied.messages, rank.links) << r;
    EXPECT_DOUBLE_EQ(rank.sent.messages, rank.links) << r;
    EXPECT_DOUBLE_EQ(rank.relayed.messages, r == 0 || rank.links > 1 ? rank.links : 0) << r;
  }
  EXPECT_DOUBLE_EQ(traffic.ranks[0].sent.messages, 8);
  // 64 up-edges carrying a subtree (ranks 1..7 of 9 workers, rank 8 of 1 and 56 leaves of 1) and
  // 64 down-edges the rest (64 workers less the subtree below).
  const double up = 7 * 9 + 57 * 1;
  const double down = 64 * 64 - up;
  // Half a message per link and step: half the messages and bytes of every edge.
  const auto halved = count_aggregated_step_traffic(tree, Placement::one_per_node(65), 10, 75, 0.5);
  for (std::size_t e = 0; e < halved.edges.size(); ++e) {
    EXPECT_DOUBLE_EQ(halved.edges[e].flow.messages, 0.5);
    EXPECT_DOUBLE_EQ(halved.edges[e].flow.bytes, traffic.edges[e].flow.bytes / 2);
  }
  // Uncapped, the mean aggregate is the mean workers per edge times a worker's bytes.
  const double infinite = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(per_worker_aggregate_bytes(tree, 10 * (up + down) / 128.0, infinite), 10, 1e-9);
  // Capped at 75 bytes, the 64 + 7 edges of more than 7 workers carry 75 each, the 57 leaves'
  // 10: a worker's bytes found again from that mean.
  EXPECT_NEAR(per_worker_aggregate_bytes(tree, (71 * 75 + 57 * 10) / 128.0, 75), 10, 1e-6);
  // Every edge capped: the least that caps them all.
  EXPECT_NEAR(per_worker_aggregate_bytes(tree, 75, 75), 75, 1e-9);
}

TEST(Projection, AggregatingKeepsTheMastersCopiesAndALeafsMessagesFlat) {
  StepCosts costs{2e-3, 2e-4, 100, 1e-6, 5e-6};
  costs.max_message_bytes = 5000;
  const LinkModel link{1e10};
  for (int workers : {4096, 32768}) {
    const auto tree = topology::build_mesh(workers + 1, 8, 10);
    const auto p = project(tree, Placement::one_per_node(workers + 1), costs, link, 0, 0.0, true);
    EXPECT_DOUBLE_EQ(p.leaf_in_bytes, 5000.0) << workers << ": every other worker's, densest";
    EXPECT_DOUBLE_EQ(p.master_copies, 8.0) << workers;
    // An inner worker: 9 links, 9 applies and 9 re-encoded messages beside its step.
    EXPECT_NEAR(p.busiest_worker_cpu_seconds, 2.2e-3 + 9 * (1e-6 + 5e-6), 1e-9) << workers;
  }
  const auto small = project(topology::build_mesh(9, 8, 10), Placement::one_per_node(9), costs,
                             link, 0, 0.0, true);
  EXPECT_DOUBLE_EQ(small.leaf_in_bytes, 700.0) << "the 7 other workers', under the densest";
}

}  // namespace
}  // namespace gradshare::sim
