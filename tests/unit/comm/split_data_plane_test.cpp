// split_data_plane_test.cpp: SplitDataPlane over in-process planes, as transport.data_plane:
// auto builds it between nodes: each rank's same-node links on one plane numbered by node rank,
// its other links on a second plane numbered by job rank. The flood proves every message
// reaches every replica once, intact and in order through the mixed planes, also with rings
// small enough for constant back-pressure; the rest checks routing and its errors.
#include "comm/split_data_plane.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "comm/inproc/in_process.h"
#include "comm/ring_frame.h"
#include "core/errors.h"
#include "flood_node.h"
#include "topology/tree.h"

namespace gradshare::comm {
namespace {

// Builds every rank's split plane for `tree`, with node_of[rank] naming its node.
class SplitFabric {
 public:
  SplitFabric(const topology::Tree& tree, const std::vector<int>& node_of, std::size_t ring_bytes)
      : capacity_(ring_capacity(ring_bytes)) {
    const int ranks = tree.size();
    for (int from = 0; from < ranks; ++from)
      for (int to : tree.links(from)) {
        rings_.push_back(std::make_unique<InProcessRing>(capacity_));
        ring_of_[{from, to}] = rings_.back().get();
      }
    for (int rank = 0; rank < ranks; ++rank) {
      std::vector<int> node_rank(static_cast<std::size_t>(ranks), -1);
      int next = 0;
      for (int r = 0; r < ranks; ++r)
        if (node_of[r] == node_of[rank]) node_rank[r] = next++;
      std::vector<SplitDataPlane::Part> parts;
      parts.push_back(part(rank, tree, [&](int link) { return node_of[link] == node_of[rank]; },
                           node_rank[rank], [&](int link) { return node_rank[link]; }));
      parts.push_back(part(rank, tree, [&](int link) { return node_of[link] != node_of[rank]; },
                           rank, [](int link) { return link; }));
      planes_.push_back(std::make_unique<SplitDataPlane>(std::move(parts), ranks));
    }
  }
  DataPlane& plane(int rank) { return *planes_[static_cast<std::size_t>(rank)]; }

 private:
  template <typename Select, typename Inner>
  SplitDataPlane::Part part(int rank, const topology::Tree& tree, Select select, int inner_self,
                            Inner inner) {
    std::vector<int> inner_links, outer;
    std::vector<InProcessRing*> outbound, inbound;
    for (int link : tree.links(rank)) {
      if (!select(link)) continue;
      inner_links.push_back(inner(link));
      outer.push_back(link);
      outbound.push_back(ring_of_.at({rank, link}));
      inbound.push_back(ring_of_.at({link, rank}));
    }
    return {std::make_unique<InProcessDataPlane>(inner_self, std::move(inner_links),
                                                 std::move(outbound), std::move(inbound),
                                                 capacity_),
            std::move(outer)};
  }

  std::size_t capacity_;
  std::vector<std::unique_ptr<InProcessRing>> rings_;
  std::map<std::pair<int, int>, InProcessRing*> ring_of_;
  std::vector<std::unique_ptr<SplitDataPlane>> planes_;
};

struct Case {
  const char* name;
  topology::Tree tree;
  std::vector<int> node_of;
  std::size_t ring_bytes;
  std::size_t max_message_bytes;
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

class SplitFlood : public ::testing::TestWithParam<Case> {};

TEST_P(SplitFlood, EveryMessageReachesEveryReplicaOnceInOrder) {
  const Case& c = GetParam();
  const int ranks = c.tree.size();
  testing::FloodOptions options;
  options.ranks = ranks;
  options.messages_per_rank = 120;
  options.max_message_bytes = c.max_message_bytes;
  options.relay_queue_bytes = 4 * c.ring_bytes;
  SplitFabric fabric(c.tree, c.node_of, c.ring_bytes);
  std::vector<std::unique_ptr<testing::FloodNode>> nodes;
  for (int rank = 0; rank < ranks; ++rank)
    nodes.push_back(std::make_unique<testing::FloodNode>(fabric.plane(rank), rank, options));
  testing::run_flood_threads(nodes);
  TransportStats total;
  for (int rank = 0; rank < ranks; ++rank) {
    EXPECT_EQ(nodes[rank]->error_count(), 0u)
        << (nodes[rank]->errors().empty() ? "" : nodes[rank]->errors()[0]);
    EXPECT_EQ(nodes[rank]->received(), static_cast<std::size_t>((ranks - 1) * 120))
        << "rank " << rank;
    total += fabric.plane(rank).stats();
  }
  EXPECT_EQ(total.messages_sent, static_cast<std::uint64_t>(ranks) * 120 * (ranks - 1));
  EXPECT_EQ(total.messages_sent, total.messages_received);
  EXPECT_EQ(total.bytes_sent, total.bytes_received);
}

INSTANTIATE_TEST_SUITE_P(
    Nodes, SplitFlood,
    ::testing::Values(
        // 1 master + 4 workers on 4 nodes, master with worker 4 (mpirun --map-by node).
        Case{"plain5_4nodes", topology::build_plain(5), {0, 1, 2, 3, 0}, 1 << 16, 2000},
        Case{"mesh9_3nodes", topology::build_mesh(9, 2, 5), {0, 0, 0, 3, 3, 3, 6, 6, 6}, 1 << 16,
             2000},
        Case{"mesh7_interleaved_tiny_ring", topology::build_mesh(7, 2, 5),
             {0, 1, 0, 1, 0, 1, 0}, 512, 200}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(SplitDataPlane, RoutesEachLinkToItsPartAndNamesSendersInOuterRanks) {
  const topology::Tree tree = topology::build_plain(4);
  SplitFabric fabric(tree, {0, 0, 1, 1}, 1 << 12);
  DataPlane& master = fabric.plane(0);
  EXPECT_EQ(master.links(), (std::vector<int>{1, 2, 3}));
  const std::vector<std::uint8_t> hello{1, 2, 3};
  ASSERT_TRUE(fabric.plane(1).try_send(0, hello));  // same node: node rank 0
  ASSERT_TRUE(fabric.plane(3).try_send(0, hello));  // other node: job rank 0
  std::vector<int> from;
  master.poll([&](int sender, std::span<const std::uint8_t> bytes) {
    from.push_back(sender);
    EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), hello);
  });
  EXPECT_EQ(from, (std::vector<int>{1, 3}));
  EXPECT_THROW(master.try_send(0, hello), core::RuntimeError);
}

TEST(SplitDataPlane, RejectsALinkServedByTwoParts) {
  const topology::Tree tree = topology::build_plain(3);
  InProcessFabric a(3, tree, 4096);
  InProcessFabric b(3, tree, 4096);
  std::vector<SplitDataPlane::Part> parts;
  // The fabrics own their planes; the parts borrow rank 0's.
  struct Borrowed : DataPlane {
    explicit Borrowed(DataPlane& inner) : inner_(inner) {}
    const std::vector<int>& links() const override { return inner_.links(); }
    bool can_send(int l, std::size_t n) override { return inner_.can_send(l, n); }
    bool try_send(int l, std::span<const std::uint8_t> m) override { return inner_.try_send(l, m); }
    std::size_t poll(const MessageHandler& h) override { return inner_.poll(h); }
    std::size_t max_message_bytes() const override { return inner_.max_message_bytes(); }
    TransportStats stats() const override { return inner_.stats(); }
    DataPlane& inner_;
  };
  parts.push_back({std::make_unique<Borrowed>(a.plane(0)), {1, 2}});
  parts.push_back({std::make_unique<Borrowed>(b.plane(0)), {2, 1}});
  EXPECT_THROW(SplitDataPlane(std::move(parts), 3), core::RuntimeError);
}

}  // namespace
}  // namespace gradshare::comm
