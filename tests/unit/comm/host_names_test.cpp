// host_names_test.cpp: the banner's host list.
#include "comm/mpi/host_names.h"

#include <gtest/gtest.h>

namespace gradshare::comm {
namespace {

TEST(DescribeHosts, ListsHostsByLowestRankWithTheirRanks) {
  EXPECT_EQ(describe_hosts({"node1", "node2", "node3", "node4", "node1"}),
            "node1 [0 4], node2 [1], node3 [2], node4 [3]");
  EXPECT_EQ(describe_hosts({"a", "a", "a"}), "a [0 1 2]");
  EXPECT_EQ(describe_hosts({}), "");
}

}  // namespace
}  // namespace gradshare::comm
