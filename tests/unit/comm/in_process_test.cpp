// in_process_test.cpp: the in-process data plane and the relay: every message reaches every
// replica exactly once over plain and mesh trees, back-pressure with tiny rings, error paths.
#include "comm/inproc/in_process.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/relay.h"
#include "comm/ring_frame.h"
#include "core/errors.h"
#include "flood_node.h"
#include "topology/tree.h"

namespace gradshare::comm {
namespace {

using testing::FloodNode;
using testing::FloodOptions;

std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

struct FloodResult {
  std::vector<std::string> errors;
  std::size_t error_count = 0;
  std::vector<std::size_t> received;
  TransportStats total;
};

// Runs one thread per rank until every rank has everything, then polls once more for duplicates.
FloodResult run_flood(const topology::Tree& tree, std::size_t ring_bytes, FloodOptions options) {
  options.ranks = tree.size();
  for (int rank = 0; rank < tree.size(); ++rank)
    options.participating.push_back(tree.is_live(rank));
  InProcessFabric fabric(tree.size(), tree, ring_bytes);
  std::vector<std::unique_ptr<FloodNode>> nodes;
  for (int rank = 0; rank < tree.size(); ++rank)
    nodes.push_back(std::make_unique<FloodNode>(fabric.plane(rank), rank, options));
  testing::run_flood_threads(nodes);
  FloodResult result;
  for (int rank = 0; rank < tree.size(); ++rank) {
    FloodNode& node = *nodes[rank];
    result.errors.insert(result.errors.end(), node.errors().begin(), node.errors().end());
    result.error_count += node.error_count();
    result.received.push_back(node.received());
    result.total += fabric.plane(rank).stats();
  }
  return result;
}

void expect_flood_ok(const FloodResult& result, const topology::Tree& tree, int per_rank) {
  EXPECT_EQ(result.error_count, 0u) << (result.errors.empty() ? "" : result.errors[0]);
  int live = 0;
  for (int rank = 0; rank < tree.size(); ++rank) live += tree.is_live(rank);
  for (int rank = 0; rank < tree.size(); ++rank)
    EXPECT_EQ(result.received[rank],
              tree.is_live(rank) ? static_cast<std::size_t>((live - 1) * per_rank) : 0u)
        << "rank " << rank;
  EXPECT_EQ(result.total.messages_sent, result.total.messages_received);
  EXPECT_EQ(result.total.bytes_sent, result.total.bytes_received);
}

struct FloodCase {
  const char* name;
  topology::Tree tree;
  std::size_t ring_bytes;
  std::size_t max_message_bytes;
};

void PrintTo(const FloodCase& c, std::ostream* out) { *out << c.name; }

class Flood : public ::testing::TestWithParam<FloodCase> {};

TEST_P(Flood, EveryMessageReachesEveryReplicaExactlyOnce) {
  const FloodCase& c = GetParam();
  FloodOptions options;
  options.messages_per_rank = 150;
  options.max_message_bytes = c.max_message_bytes;
  options.relay_queue_bytes = 4 * c.ring_bytes;
  FloodResult result = run_flood(c.tree, c.ring_bytes, options);
  expect_flood_ok(result, c.tree, options.messages_per_rank);
  // Each message crosses every edge of the tree exactly once: n - 1 edges, n * K messages.
  std::size_t n = 0;
  for (int rank = 0; rank < c.tree.size(); ++rank) n += c.tree.is_live(rank);
  EXPECT_EQ(result.total.messages_sent, n * 150 * (n - 1));
}

INSTANTIATE_TEST_SUITE_P(
    Trees, Flood,
    ::testing::Values(FloodCase{"plain3", topology::build_plain(3), 1 << 16, 2000},
                      FloodCase{"plain5", topology::build_plain(5), 1 << 16, 2000},
                      FloodCase{"mesh7_fanout2", topology::build_mesh(7, 2, 5), 1 << 16, 2000},
                      FloodCase{"mesh10_chain", topology::build_mesh(10, 1, 9), 1 << 16, 500},
                      FloodCase{"mesh13_fanout3_tiny_ring", topology::build_mesh(13, 3, 5), 512,
                                200},
                      FloodCase{"repaired_mesh",
                                topology::reattach_children(topology::build_mesh(9, 2, 5), 1, 2, 5),
                                1 << 14, 1000}),
    [](const ::testing::TestParamInfo<FloodCase>& info) { return info.param.name; });

TEST(InProcess, TinyRingForcesBackPressureAndLosesNothing) {
  FloodOptions options;
  options.messages_per_rank = 300;
  options.min_message_bytes = 100;
  options.max_message_bytes = 240;  // a 256-byte ring holds one message at a time
  options.relay_queue_bytes = 1024;
  topology::Tree tree = topology::build_mesh(7, 2, 5);
  FloodResult result = run_flood(tree, 256, options);
  expect_flood_ok(result, tree, options.messages_per_rank);
  EXPECT_GT(result.total.back_pressure_events, 0u);
}

TEST(InProcess, TrySendRefusesWhenFullAndRecoversAfterPoll) {
  InProcessFabric fabric(2, topology::build_plain(2), 64);
  DataPlane& sender = fabric.plane(1);
  DataPlane& receiver = fabric.plane(0);
  EXPECT_EQ(sender.max_message_bytes(), 56u);
  std::vector<std::uint8_t> message(24, 1);  // 32-byte frames: two fill the ring
  EXPECT_TRUE(sender.try_send(0, message));
  EXPECT_TRUE(sender.try_send(0, message));
  EXPECT_FALSE(sender.try_send(0, message));
  EXPECT_EQ(sender.stats().back_pressure_events, 1u);
  std::vector<int> from;
  EXPECT_EQ(receiver.poll([&](int link, std::span<const std::uint8_t>) { from.push_back(link); }),
            2u);
  EXPECT_EQ(from, (std::vector<int>{1, 1}));
  EXPECT_TRUE(sender.try_send(0, message));
  EXPECT_EQ(sender.stats().messages_sent, 3u);
  EXPECT_EQ(receiver.stats().bytes_received, 48u);
}

TEST(InProcess, OversizedMessageIsAConfigError) {
  InProcessFabric fabric(2, topology::build_plain(2), 64);
  std::vector<std::uint8_t> message(57, 0);
  try {
    fabric.plane(1).try_send(0, message);
    FAIL() << "a 57-byte message went through a 64-byte ring";
  } catch (const core::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("transport.ring_bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(require_message_fits(fabric.plane(1), 1000, "a dense bitmap message"),
               core::UserError);
  EXPECT_NO_THROW(require_message_fits(fabric.plane(1), 56, "a dense bitmap message"));
}

TEST(InProcess, SendingToANonLinkIsABug) {
  InProcessFabric fabric(3, topology::build_plain(3), 256);
  EXPECT_THROW(fabric.plane(1).try_send(2, bytes_of("x")), core::RuntimeError);
}

TEST(InProcess, PollCannotBeReentered) {
  InProcessFabric fabric(2, topology::build_plain(2), 256);
  ASSERT_TRUE(fabric.plane(1).try_send(0, bytes_of("x")));
  DataPlane& plane = fabric.plane(0);
  EXPECT_THROW(plane.poll([&](int, std::span<const std::uint8_t>) {
    plane.poll([](int, std::span<const std::uint8_t>) {});
  }),
               core::RuntimeError);
  // The guard is released after the exception: polling works again.
  EXPECT_EQ(plane.poll([](int, std::span<const std::uint8_t>) {}), 0u);
}

TEST(InProcess, GarbageInARingIsReportedNamingTheLink) {
  InProcessRing forward(64);
  InProcessRing backward(64);
  InProcessDataPlane receiver(0, {4}, {&backward}, {&forward}, 64);
  std::vector<std::uint8_t> garbage(16, 0xAB);
  std::copy(garbage.begin(), garbage.end(), forward.bytes.begin());
  forward.tail.store(16);
  try {
    receiver.poll([](int, std::span<const std::uint8_t>) { FAIL() << "garbage delivered"; });
    FAIL() << "garbage went unnoticed";
  } catch (const core::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("inbound ring from rank 4"), std::string::npos)
        << e.what();
  }
}

TEST(Relay, QueuesBehindBackPressureInOrderAndReportsSaturation) {
  // 1 -> 0 -> 2 over a plain tree; rank 2's ring holds one 56-byte message at a time.
  InProcessFabric fabric(3, topology::build_plain(3), 64);
  DataPlane& master = fabric.plane(0);
  Relay relay(master, 100);
  for (int i = 0; i < 5; ++i) {
    std::vector<std::uint8_t> message(56, static_cast<std::uint8_t>(i));
    ASSERT_TRUE(fabric.plane(1).try_send(0, message));
    master.poll([&](int from, std::span<const std::uint8_t> m) { relay.forward(from, m); });
  }
  EXPECT_EQ(relay.queued_messages(), 4u);
  EXPECT_EQ(relay.queued_bytes(2), 4u * 56u);
  EXPECT_EQ(relay.queued_bytes(1), 0u);  // never sent back where it came from
  EXPECT_TRUE(relay.saturated());
  std::vector<int> order;
  auto drain = [&] {
    fabric.plane(2).poll([&](int from, std::span<const std::uint8_t> m) {
      EXPECT_EQ(from, 0);
      order.push_back(m[0]);
    });
  };
  for (int round = 0; round < 5; ++round) {
    drain();
    relay.flush();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(relay.queued_messages(), 0u);
  EXPECT_FALSE(relay.saturated());
  EXPECT_EQ(relay.stats().delivered, 5u);
  EXPECT_EQ(relay.stats().deferred, 4u);
  EXPECT_EQ(fabric.plane(1).poll([](int, std::span<const std::uint8_t>) {}), 0u);
}

TEST(Relay, ForwardingFromANonLinkIsABug) {
  InProcessFabric fabric(3, topology::build_mesh(3, 1, 2), 256);  // chain 0 - 1 - 2
  Relay relay(fabric.plane(0), 1024);
  EXPECT_THROW(relay.forward(2, bytes_of("x")), core::RuntimeError);
}

}  // namespace
}  // namespace gradshare::comm
