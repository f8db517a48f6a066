// in_process_control_test.cpp: the in-process control channel matches by tag and source, keeps
// each sender's order, times out naming the peer, and carries messages between threads.
#include "test_tags.h"
#include "comm/inproc/in_process_control.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/errors.h"

namespace gradshare::comm {
namespace {

std::vector<std::uint8_t> bytes(std::uint8_t value) { return {value}; }

TEST(InProcessControl, MatchesTagAndSourceInOrder) {
  InProcessControlHub hub(3, 1.0);
  hub.channel(1).send(0, test_tags::kSharingReport, bytes(1));
  hub.channel(2).send(0, test_tags::kSharingReport, bytes(2));
  hub.channel(1).send(0, test_tags::kSharingDone, bytes(3));
  hub.channel(1).send(0, test_tags::kSharingReport, bytes(4));
  auto& master = hub.channel(0);
  EXPECT_FALSE(master.try_receive(test_tags::kHeartbeat));
  const auto done = master.try_receive(test_tags::kSharingDone);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->source, 1);
  EXPECT_EQ(done->payload, bytes(3));
  const auto from_two = master.try_receive(std::nullopt, 2);
  ASSERT_TRUE(from_two);
  EXPECT_EQ(from_two->payload, bytes(2));
  EXPECT_EQ(master.try_receive(test_tags::kSharingReport, 1)->payload, bytes(1));
  EXPECT_EQ(master.try_receive()->payload, bytes(4));
  EXPECT_EQ(hub.waiting(0), 0u);
}

TEST(InProcessControl, ReceiveTimesOutNamingThePeer) {
  InProcessControlHub hub(2, 0.05);
  try {
    hub.channel(1).receive(0, test_tags::kPartitionGrant, "partition grant");
    FAIL() << "no timeout";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("waiting for rank 0: partition grant"),
              std::string::npos)
        << error.what();
  }
}

TEST(InProcessControl, RejectsAnUnknownRank) {
  InProcessControlHub hub(2, 1.0);
  EXPECT_THROW(hub.channel(0).send(2, test_tags::kSharingReport, {}), core::RuntimeError);
  EXPECT_THROW(hub.channel(-1), core::RuntimeError);
}

TEST(InProcessControl, CarriesMessagesBetweenThreads) {
  constexpr int kWorkers = 3, kMessages = 200;
  InProcessControlHub hub(kWorkers + 1, 10.0);
  std::vector<std::thread> workers;
  for (int w = 1; w <= kWorkers; ++w)
    workers.emplace_back([&hub, w] {
      for (int i = 0; i < kMessages; ++i)
        hub.channel(w).send(0, test_tags::kSharingReport, bytes(static_cast<std::uint8_t>(i)));
      hub.channel(w).receive(0, test_tags::kShutdown, "shutdown");
    });
  std::vector<int> next(kWorkers + 1, 0);
  for (int received = 0; received < kWorkers * kMessages; ++received) {
    const auto message = hub.channel(0).receive(kAnySource, test_tags::kSharingReport, "metrics");
    EXPECT_EQ(message.payload, bytes(static_cast<std::uint8_t>(next[message.source]++)));
  }
  for (int w = 1; w <= kWorkers; ++w) hub.channel(0).send(w, test_tags::kShutdown, {});
  for (auto& worker : workers) worker.join();
  for (int w = 1; w <= kWorkers; ++w) EXPECT_EQ(next[w], kMessages);
}

}  // namespace
}  // namespace gradshare::comm
