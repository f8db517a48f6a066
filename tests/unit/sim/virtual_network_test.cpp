// virtual_network_test.cpp: messages arrive when the modelled links say, in order, and a full
// ring pushes back as the real rings do; transfers from several nodes share an inbound link; a
// burst passes a quiet link at once.
#include "sim/virtual_network.h"

#include <gtest/gtest.h>

#include <vector>

namespace gradshare::sim {
namespace {

std::vector<std::uint8_t> bytes(std::size_t size, std::uint8_t value) {
  return std::vector<std::uint8_t>(size, value);
}

TEST(VirtualNetwork, DeliversAtTheLinksArrivalTimeInOrder) {
  const LinkModel link{8e6, 0.0, 0.0};  // a byte per microsecond
  VirtualNetwork network(topology::build_plain(2), Placement::one_per_node(2), link, 1 << 20);
  auto& sender = network.plane(1);
  auto& receiver = network.plane(0);
  ASSERT_TRUE(sender.try_send(0, bytes(1000, 1)));
  ASSERT_TRUE(sender.try_send(0, bytes(500, 2)));
  EXPECT_NEAR(network.next_arrival(0), 1e-3, 1e-12);
  std::vector<std::uint8_t> seen;
  const auto handler = [&](int from, std::span<const std::uint8_t> message) {
    EXPECT_EQ(from, 1);
    seen.push_back(message[0]);
  };
  network.clock(0) = 0.9e-3;
  EXPECT_EQ(receiver.poll(handler), 0u);
  network.clock(0) = 1.0e-3;
  EXPECT_EQ(receiver.poll(handler), 1u);
  network.clock(0) = 1.5e-3;  // the second waited for the first on the sender's link
  EXPECT_EQ(receiver.poll(handler), 1u);
  EXPECT_EQ(seen, (std::vector<std::uint8_t>{1, 2}));
  EXPECT_TRUE(network.idle());
  EXPECT_DOUBLE_EQ(network.link_flow(1, 0).bytes, 1500);
  EXPECT_DOUBLE_EQ(receiver.stats().bytes_received, 1500);
}

TEST(VirtualNetwork, ReceiversShareTheirInboundLink) {
  const LinkModel link{8e6, 0.0, 0.0};
  VirtualNetwork network(topology::build_plain(3), Placement::one_per_node(3), link, 1 << 20);
  ASSERT_TRUE(network.plane(1).try_send(0, bytes(1000, 1)));
  ASSERT_TRUE(network.plane(2).try_send(0, bytes(1000, 2)));
  network.clock(0) = 1.5e-3;
  EXPECT_EQ(network.plane(0).poll([](int, std::span<const std::uint8_t>) {}), 1u);
  network.clock(0) = 2.0e-3;
  EXPECT_EQ(network.plane(0).poll([](int, std::span<const std::uint8_t>) {}), 1u);
}

// Bytes from several nodes into one share its inbound link as they enter it: a short message
// waits for what entered before it, not for the rest of a long transfer started just before.
TEST(VirtualNetwork, ATransferSharesTheLinksAndHoldsBackOnlyWhatEnteredBefore) {
  const LinkModel link{8e6, 0.0, 0.0};  // a byte per microsecond
  VirtualNetwork network(topology::build_plain(3), Placement::one_per_node(3), link, 1 << 20);
  // 100 kB from node 1: 0.1 s on its outbound link and, cut through, on the master's inbound.
  EXPECT_NEAR(network.transfer(1, 0, 100000, 0.0), 0.1, 1e-12);
  // A message from node 2 at 10 ms enters beside the transfer's bytes: they share the link, so
  // its last byte leaves 1 ms after it entered, not after the transfer's 90 ms still to come.
  network.clock(2) = 0.01;
  ASSERT_TRUE(network.plane(2).try_send(0, bytes(1000, 2)));
  EXPECT_NEAR(network.next_arrival(0), 0.012, 1e-12);
  // Node 1's own message leaves after the whole transfer on its outbound link, and after the
  // master's link has sent the transfer and node 2's message.
  ASSERT_TRUE(network.plane(1).try_send(0, bytes(1000, 1)));
  network.clock(0) = 0.1015;
  EXPECT_EQ(network.plane(0).poll([](int, std::span<const std::uint8_t>) {}), 1u);
  network.clock(0) = 0.1021;
  EXPECT_EQ(network.plane(0).poll([](int, std::span<const std::uint8_t>) {}), 1u);
  EXPECT_TRUE(network.idle());
  // A second transfer from node 2 at 10 ms (after its message, at 11 ms): its last byte enters
  // at 0.111 s, after all the rest, and leaves once the link has sent everything.
  EXPECT_NEAR(network.transfer(2, 0, 100000, 0.01), 0.202, 1e-12);
  // Nothing of a transfer is delivered, and one on a single node costs no link time.
  EXPECT_DOUBLE_EQ(network.link_flow(1, 0).bytes, 1000);
  VirtualNetwork one_node(topology::build_plain(2), Placement::by_node(2, 1), link, 1 << 20);
  EXPECT_DOUBLE_EQ(one_node.transfer(1, 0, 100000, 0.5), 0.5);
}

// A token bucket's burst: a quiet link lets that much through at once, then carries its rate.
TEST(VirtualNetwork, ABurstPassesAQuietLinkAtOnceAndASaturatedOneAtItsRate) {
  LinkModel link{8e6, 0.0, 0.0};  // a byte per microsecond
  link.burst_bytes = 10000;
  VirtualNetwork network(topology::build_plain(2), Placement::one_per_node(2), link, 1 << 20);
  // A quiet link: 1 kB arrives when sent, on both links.
  ASSERT_TRUE(network.plane(1).try_send(0, bytes(1000, 1)));
  EXPECT_DOUBLE_EQ(network.next_arrival(0), 0.0);
  // 100 kB more: the first 9 kB of it ride the rest of the burst, the other 91 kB the rate.
  EXPECT_NEAR(network.transfer(1, 0, 100000, 0.0), 0.091, 1e-12);
  // Idle for a second: the bucket is full again (and no fuller).
  EXPECT_NEAR(network.transfer(1, 0, 30000, 1.1), 1.12, 1e-12);
}

TEST(VirtualNetwork, SameNodeCostsNoLinkTimeAndAFullRingPushesBack) {
  const LinkModel link{8e6, 0.0, 0.0};
  VirtualNetwork network(topology::build_plain(2), Placement::by_node(2, 1), link, 1500);
  auto& sender = network.plane(1);
  ASSERT_TRUE(sender.try_send(0, bytes(1000, 1)));
  EXPECT_DOUBLE_EQ(network.next_arrival(0), 0.0);
  EXPECT_FALSE(sender.can_send(0, 1000));
  EXPECT_FALSE(sender.try_send(0, bytes(1000, 2)));
  EXPECT_EQ(sender.stats().back_pressure_events, 1u);
  EXPECT_EQ(network.plane(0).poll([](int, std::span<const std::uint8_t>) {}), 1u);
  EXPECT_TRUE(sender.try_send(0, bytes(1000, 2)));
}

}  // namespace
}  // namespace gradshare::sim
