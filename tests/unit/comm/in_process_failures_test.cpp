// in_process_failures_test.cpp: failure and repair in an in-process job behave as under ULFM:
// after a thread fails every live rank's control calls throw a process failure (a rank that
// made its channel late included), the repair returns to all once all arrived with the lost
// ranks, a waiting spare takes a lost rank under replace, channels made after the repair work,
// and a rank that never joins makes the repair time out instead of hanging.
#include "test_tags.h"
#include "comm/inproc/in_process_failures.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "comm/inproc/in_process_job.h"
#include "comm/transport_error.h"

namespace gradshare::comm {
namespace {

bool throws_process_failure(ControlChannel& channel) {
  try {
    channel.try_receive();
    return false;
  } catch (const TransportError& error) {
    return error.is_process_failure();
  }
}

TEST(InProcessFailures, FailureFailsEveryChannelUntilTheRepair) {
  InProcessJobHub hub(4, 10.0, {/*repairable=*/true, /*spares=*/0});
  auto early = hub.job(1).control_channel(10.0);
  EXPECT_FALSE(throws_process_failure(*early));
  hub.job(0).control_channel(10.0)->send(3, test_tags::kHeartbeat, {});  // dropped by the repair
  hub.fail(2);
  EXPECT_TRUE(throws_process_failure(*early));
  // A channel made after the failure and before the repair fails too (a revoked communicator).
  EXPECT_TRUE(throws_process_failure(*hub.job(3).control_channel(10.0)));
  std::vector<InProcessRepair> repairs(4);
  int completed = 0;
  std::vector<std::thread> threads;
  for (int rank : {0, 1, 3})
    threads.emplace_back([&, rank] {
      repairs[static_cast<std::size_t>(rank)] =
          hub.job(rank).repair(rank, /*replace=*/false, [&](const InProcessRepair&) { ++completed; });
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(completed, 1);
  for (int rank : {0, 1, 3}) {
    EXPECT_EQ(repairs[static_cast<std::size_t>(rank)].lost, std::vector<int>{2});
    EXPECT_TRUE(repairs[static_cast<std::size_t>(rank)].replaced.empty());
  }
  EXPECT_EQ(hub.unreceived(3), 0u);
  auto after = hub.job(1).control_channel(10.0);
  EXPECT_FALSE(throws_process_failure(*after));
  EXPECT_TRUE(throws_process_failure(*early));  // the old channel stays revoked
}

TEST(InProcessFailures, SpareTakesTheLostRankUnderReplace) {
  InProcessJobHub hub(4, 10.0, {/*repairable=*/true, /*spares=*/1});  // ranks 0-2, spare 3
  std::optional<InProcessFailures::Assignment> assignment;
  std::thread spare([&] { assignment = hub.job(3).wait_as_spare(); });
  hub.fail(1);
  std::vector<InProcessRepair> repairs(2);
  std::vector<std::thread> threads;
  for (int rank : {0, 2})
    threads.emplace_back([&, rank] {
      repairs[rank == 0 ? 0 : 1] = hub.job(rank).repair(rank, /*replace=*/true, [](auto&) {});
    });
  for (auto& thread : threads) thread.join();
  spare.join();
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->logical, 1);
  EXPECT_EQ(assignment->repair.replaced, std::vector<int>{1});
  EXPECT_EQ(repairs[0].replaced, std::vector<int>{1});
  EXPECT_EQ(repairs[1].lost, std::vector<int>{1});
}

TEST(InProcessFailures, ReleasedSpareGetsNothing) {
  InProcessJobHub hub(3, 10.0, {/*repairable=*/true, /*spares=*/1});
  std::optional<InProcessFailures::Assignment> assignment{InProcessFailures::Assignment{7, {}}};
  std::thread spare([&] { assignment = hub.job(2).wait_as_spare(); });
  hub.release_spares();
  spare.join();
  EXPECT_FALSE(assignment.has_value());
}

TEST(InProcessFailures, RankThatNeverJoinsTimesTheRepairOut) {
  InProcessJobHub hub(3, 0.2, {/*repairable=*/true, /*spares=*/0});
  hub.fail(2);
  try {
    hub.job(0).repair(0, false, [](auto&) {});  // rank 1 never comes
    FAIL() << "the repair returned without rank 1";
  } catch (const TransportError& error) {
    EXPECT_FALSE(error.is_process_failure());
  }
}

}  // namespace
}  // namespace gradshare::comm
