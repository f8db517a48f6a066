// plane_choice_test.cpp: the per-link data plane rule of transport.data_plane.
#include "comm/plane_choice.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace gradshare::comm {
namespace {

TEST(PlaneChoice, AutoKeepsRmaInSharedMemoryAndMessagesOverTcp) {
  const PlaneChoice choice = choose_planes("auto", false);
  EXPECT_EQ(choice.same_node, PlaneKind::kRma);
  EXPECT_EQ(choice.between_nodes, PlaneKind::kTwoSided);
  EXPECT_EQ(choice.describe(1), "links rma (shared memory)");
  EXPECT_NE(choice.describe(3).find("links between nodes two_sided (no RDMA device"),
            std::string::npos)
      << choice.describe(3);
}

TEST(PlaneChoice, AutoUsesRmaBetweenNodesOnlyWithRdmaEverywhere) {
  const PlaneChoice choice = choose_planes("auto", true);
  EXPECT_EQ(choice.same_node, PlaneKind::kRma);
  EXPECT_EQ(choice.between_nodes, PlaneKind::kRma);
  EXPECT_NE(choice.describe(2).find("every rank has an RDMA device"), std::string::npos);
}

TEST(PlaneChoice, ForcedSettingsApplyToEveryLink) {
  for (bool rdma : {false, true}) {
    const PlaneChoice rma = choose_planes("rma", rdma);
    EXPECT_EQ(rma.same_node, PlaneKind::kRma);
    EXPECT_EQ(rma.between_nodes, PlaneKind::kRma);
    const PlaneChoice two_sided = choose_planes("two_sided", rdma);
    EXPECT_EQ(two_sided.same_node, PlaneKind::kTwoSided);
    EXPECT_EQ(two_sided.between_nodes, PlaneKind::kTwoSided);
    EXPECT_NE(two_sided.describe(2).find("transport.data_plane: two_sided"), std::string::npos);
  }
}

TEST(PlaneChoice, AutoKeepsSharedMemoryRingsUnderFaultToleranceAndMessagesBetweenNodes) {
  const PlaneChoice choice = choose_planes("auto", true, true);
  EXPECT_EQ(choice.same_node, PlaneKind::kRma);
  EXPECT_NE(choice.same_node_why.find("rebuilt after a repair"), std::string::npos);
  EXPECT_EQ(choice.between_nodes, PlaneKind::kTwoSided);
  EXPECT_EQ(choose_planes("rma", false, true).same_node, PlaneKind::kRma);  // forced stays
}

TEST(PlaneChoice, UnknownSettingIsAUserError) {
  EXPECT_THROW(choose_planes("shmem", false), core::UserError);
}

}  // namespace
}  // namespace gradshare::comm
