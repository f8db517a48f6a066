// in_process_job_test.cpp: the in-process job's workers' group reduces across threads and gives
// every member the same bits; a member that never arrives makes the others time out; the job
// hands rank 0 no group and every rank a channel to the others.
#include "comm/in_process_job.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/errors.h"

namespace gradshare::comm {
namespace {

TEST(InProcessJob, GroupReducesAndEveryMemberGetsTheSameBits) {
  constexpr int kRanks = 5, kRounds = 50;
  InProcessJobHub hub(kRanks, 10.0);
  EXPECT_EQ(hub.job(0).worker_group(), nullptr);
  std::vector<std::vector<float>> sums(kRanks);
  std::vector<std::thread> threads;
  for (int r = 1; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      auto group = hub.job(r).worker_group();
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
  auto group = hub.job(1).worker_group();  // rank 2 never joins the all-reduce
  std::vector<float> values = {1.0f};
  EXPECT_THROW(group->allreduce_sum(values), core::RuntimeError);
}

TEST(InProcessJob, ChannelsReachEveryRank) {
  InProcessJobHub hub(3, 1.0);
  auto master = hub.job(0).control_channel(1.0);
  auto worker = hub.job(2).control_channel(1.0);
  const std::vector<std::uint8_t> payload = {42};
  worker->send(0, Tag::kHeartbeat, payload);
  EXPECT_EQ(hub.unreceived(0), 1u);
  const auto message = master->receive(2, Tag::kHeartbeat, "heartbeat");
  EXPECT_EQ(message.payload, payload);
  EXPECT_EQ(hub.unreceived(0), 0u);
}

}  // namespace
}  // namespace gradshare::comm
