// virtual_network_test.cpp: messages arrive when the modelled links say, in order, and a full
// ring pushes back as the real rings do.
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
