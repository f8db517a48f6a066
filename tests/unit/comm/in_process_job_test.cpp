// in_process_job_test.cpp: the in-process job's workers' group reduces and broadcasts across
// threads and gives every member the same bits; a member that never arrives makes the others
// time out; on a repairable job a failure interrupts the collectives of the group it broke (a
// process failure, as ULFM reports one) and the repaired group of the live workers works; every
// rank has a channel to the others.
#include "test_tags.h"
#include "comm/inproc/in_process_job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport_error.h"
#include "core/errors.h"

namespace gradshare::comm {
namespace {

TEST(InProcessJob, GroupReducesAndEveryMemberGetsTheSameBits) {
  constexpr int kRanks = 5, kRounds = 50;
  InProcessJobHub hub(kRanks, 10.0);
  const std::vector<int> live = {1, 2, 3, 4};
  std::vector<std::vector<float>> sums(kRanks);
  std::vector<std::thread> threads;
  for (int r = 1; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      auto group = hub.job(r).worker_group_of(live, r);
      ASSERT_EQ(group->index(), r - 1);
      ASSERT_EQ(group->size(), kRanks - 1);
      for (int round = 0; round < kRounds; ++round) {
        // Values whose float sum depends on the order of addition.
        std::vector<float> values = {1e8f * static_cast<float>(r % 2 ? 1 : -1), 0.1f * r,
                                     static_cast<float>(round)};
        group->allreduce_sum(values);
        std::int32_t votes[2] = {r == 2 && round == 7, r};
        group->allreduce_max(votes);
        EXPECT_EQ(votes[0], round == 7 ? 1 : 0);
        EXPECT_EQ(votes[1], kRanks - 1);
        std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(r), 0};
        group->broadcast(bytes, round % (kRanks - 1));
        EXPECT_EQ(bytes[0], round % (kRanks - 1) + 1);
        if (round == kRounds - 1) sums[static_cast<std::size_t>(r)] = values;
      }
      group->barrier();
    });
  for (auto& thread : threads) thread.join();
  for (int r = 2; r < kRanks; ++r) EXPECT_EQ(sums[static_cast<std::size_t>(r)], sums[1]);
  EXPECT_FLOAT_EQ(sums[1][2], 4.0f * (kRounds - 1));
}

TEST(InProcessJob, AMissingMemberMakesTheOthersTimeOut) {
  InProcessJobHub hub(3, 0.05);
  auto group = hub.job(1).worker_group_of({1, 2}, 1);  // rank 2 never joins the all-reduce
  std::vector<float> values = {1.0f};
  EXPECT_THROW(group->allreduce_sum(values), core::RuntimeError);
}

TEST(InProcessJob, AFailureInterruptsTheGroupAndTheRepairedGroupWorks) {
  InProcessJobHub hub(4, 10.0, {/*repairable=*/true, /*spares=*/0});
  std::vector<std::string> waited(4);
  std::vector<std::thread> threads;
  for (int r = 1; r <= 2; ++r)  // rank 3 dies instead of joining
    threads.emplace_back([&, r] {
      auto group = hub.job(r).worker_group_of({1, 2, 3}, r);
      std::vector<float> values = {1.0f};
      try {
        group->allreduce_sum(values);
      } catch (const TransportError& error) {
        waited[static_cast<std::size_t>(r)] = error.is_process_failure() ? "failure" : "other";
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  hub.fail(3);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(waited[1], "failure");
  EXPECT_EQ(waited[2], "failure");
  // Every live rank repairs (the master too); the group of the two live workers then reduces.
  threads.clear();
  std::vector<float> sums(4);
  for (int r = 0; r <= 2; ++r)
    threads.emplace_back([&, r] {
      hub.job(r).repair(r, /*replace=*/false, [](const InProcessRepair&) {});
      if (r == 0) return;
      auto group = hub.job(r).worker_group_of({1, 2}, r);
      std::vector<float> values = {static_cast<float>(r)};
      group->allreduce_sum(values);
      sums[static_cast<std::size_t>(r)] = values[0];
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(sums[1], 3.0f);
  EXPECT_EQ(sums[2], 3.0f);
}

TEST(InProcessJob, ChannelsReachEveryRank) {
  InProcessJobHub hub(3, 1.0);
  auto master = hub.job(0).control_channel(1.0);
  auto worker = hub.job(2).control_channel(1.0);
  const std::vector<std::uint8_t> payload = {42};
  worker->send(0, test_tags::kHeartbeat, payload);
  EXPECT_EQ(hub.unreceived(0), 1u);
  const auto message = master->receive(2, test_tags::kHeartbeat, "heartbeat");
  EXPECT_EQ(message.payload, payload);
  EXPECT_EQ(hub.unreceived(0), 0u);
}

}  // namespace
}  // namespace gradshare::comm
