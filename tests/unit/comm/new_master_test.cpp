// new_master_test.cpp: who takes a lost master's place, by node.
#include "comm/new_master.h"

#include <gtest/gtest.h>

#include <vector>

namespace gradshare::comm {
namespace {

constexpr int kSpare = -1;

// The 4-node Downpour job of docs/fault-tolerance.md after the master (node 1) died:
// node1 [worker 4], node2 [server 1, spare], node3 [worker 2], node4 [worker 3].
std::vector<Survivor> four_nodes() { return {{1, 2}, {2, 3}, {3, 4}, {4, 1}, {kSpare, 2}}; }

TEST(ChooseNewMaster, AWorkerAwayFromTheServersWhenTheOnlySpareSitsBesideOne) {
  const auto survivors = four_nodes();
  // Worker 2 (index 1): the lowest worker on a node without a server; the spare then takes 2.
  EXPECT_EQ(choose_new_master(survivors, /*first_worker=*/2, /*decider=*/1, true), 1);
}

TEST(ChooseNewMaster, ASpareAwayFromTheServersBeforeAnyWorker) {
  auto survivors = four_nodes();
  survivors.push_back({kSpare, 3});  // a second spare, on node 3
  EXPECT_EQ(choose_new_master(survivors, 2, 1, true), 5);
}

TEST(ChooseNewMaster, TheLowestLogicalWorkerWhateverTheRoundOrder) {
  // After earlier repairs round order and logical order differ.
  const std::vector<Survivor> survivors = {{1, 2}, {4, 3}, {3, 2}, {2, 4}, {kSpare, 2}};
  EXPECT_EQ(choose_new_master(survivors, 2, 3, true), 3);  // worker 2 on node 4
}

TEST(ChooseNewMaster, ASpareBesideAServerWhenEveryNodeHasOne) {
  const std::vector<Survivor> survivors = {{1, 1}, {2, 2}, {3, 1}, {4, 2}, {kSpare, 2}, {5, 1}};
  // Servers 1 and 2 on both nodes; 3 .. 5 workers.
  EXPECT_EQ(choose_new_master(survivors, 3, 2, true), 4);
}

TEST(ChooseNewMaster, TheDeciderWhenNothingIsBetter) {
  const std::vector<Survivor> survivors = {{1, 1}, {2, 1}, {3, 1}};
  EXPECT_EQ(choose_new_master(survivors, 2, 1, true), 1);
}

TEST(ChooseNewMaster, NoSpareUnderShrink) {
  const auto survivors = four_nodes();
  const std::vector<Survivor> all_beside = {{1, 2}, {2, 2}, {kSpare, 3}};
  EXPECT_EQ(choose_new_master(all_beside, 2, 1, /*replace=*/false), 1);
  EXPECT_EQ(choose_new_master(survivors, 2, 1, false), 1);
}

TEST(ChooseNewMaster, WithoutServersTheFirstSpareThenTheDeciderAsBefore) {
  // first_worker 1: gradient sharing, averaging, allreduce.
  const std::vector<Survivor> survivors = {{2, 1}, {1, 2}, {kSpare, 1}, {kSpare, 3}};
  EXPECT_EQ(choose_new_master(survivors, 1, 1, true), 2);
  const std::vector<Survivor> no_spare = {{2, 1}, {1, 2}};
  EXPECT_EQ(choose_new_master(no_spare, 1, 1, true), 1);
}

}  // namespace
}  // namespace gradshare::comm
