#include <gtest/gtest.h>

#include <set>

#include "train/partition_messages.h"
#include "runtime/partition_scheduler.h"

using gradshare::runtime::PartitionGrant;
using gradshare::runtime::PartitionScheduler;

TEST(PartitionScheduler, HandsOutEveryPartitionOnceInEpochOrder) {
  PartitionScheduler scheduler(3, 4);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  std::int64_t last_epoch = 0;
  for (int i = 0; i < 12; ++i) {
    const int worker = 1 + i % 3;
    if (i >= 3) scheduler.complete(worker);
    auto grant = scheduler.next(worker);
    ASSERT_TRUE(grant.has_value());
    EXPECT_GE(grant->epoch, last_epoch);
    last_epoch = grant->epoch;
    EXPECT_TRUE(seen.insert({grant->epoch, grant->partition}).second);
  }
  EXPECT_TRUE(scheduler.all_granted());
  EXPECT_FALSE(scheduler.all_done());
  for (int worker = 1; worker <= 3; ++worker) {
    scheduler.complete(worker);
    EXPECT_FALSE(scheduler.next(worker).has_value());
  }
  EXPECT_TRUE(scheduler.all_done());
  EXPECT_EQ(scheduler.take_completed_epochs(), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_TRUE(scheduler.take_completed_epochs().empty());
}

TEST(PartitionScheduler, EpochsEndInOrderWhenALaterOneFinishesFirst) {
  PartitionScheduler scheduler(2, 2);
  ASSERT_EQ(scheduler.next(2)->epoch, 0);  // the slow worker holds an epoch-0 partition
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(scheduler.next(1).has_value());
    scheduler.complete(1);
  }
  // Epoch 1's partitions are done, epoch 0's are not: neither has ended.
  EXPECT_TRUE(scheduler.take_completed_epochs().empty());
  scheduler.complete(2);
  EXPECT_EQ(scheduler.take_completed_epochs(), (std::vector<std::int64_t>{0, 1}));
  EXPECT_TRUE(scheduler.all_done());
}

TEST(PartitionScheduler, FastWorkerTakesMore) {
  PartitionScheduler scheduler(1, 10);
  int fast = 0;
  scheduler.next(2);  // the slow worker holds one partition the whole time
  while (auto grant = scheduler.next(1)) {
    ++fast;
    scheduler.complete(1);
  }
  EXPECT_EQ(fast, 9);
  EXPECT_FALSE(scheduler.all_done());
  scheduler.complete(2);
  EXPECT_TRUE(scheduler.all_done());
}

TEST(PartitionScheduler, DeadWorkersPartitionIsHandedOutAgain) {
  PartitionScheduler scheduler(1, 2);
  const auto lost = scheduler.next(1);
  ASSERT_TRUE(lost.has_value());
  scheduler.requeue_worker(1);
  const auto again = scheduler.next(2);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->partition, lost->partition);
  scheduler.complete(2);
  ASSERT_TRUE(scheduler.next(2).has_value());
  scheduler.complete(2);
  EXPECT_TRUE(scheduler.all_done());
}

TEST(PartitionScheduler, ResumesFromAFirstEpoch) {
  PartitionScheduler scheduler(5, 2, gradshare::runtime::DataPosition{3, {}});
  auto grant = scheduler.next(1);
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->epoch, 3);
  int count = 1;
  scheduler.complete(1);
  while (scheduler.next(1)) {
    ++count;
    scheduler.complete(1);
  }
  EXPECT_EQ(count, 4);
  EXPECT_TRUE(scheduler.all_done());
}

// A new master's schedule from the workers' reports: epoch 1 (first here) lacks partition 1,
// which worker 2 holds; epoch 2 is complete; epoch 3 has partition 0 done.
TEST(PartitionScheduler, RebuiltScheduleKeepsHeldPartitionsAndCompleteEpochs) {
  PartitionScheduler scheduler(4, 3, gradshare::runtime::DataPosition{1, {0, 2, 3, 4, 5, 6}},
                               {2, 2, 1});
  scheduler.adopt_in_flight(2, {1, 1});
  ASSERT_EQ(scheduler.in_flight(2)->partition, 1);
  EXPECT_TRUE(scheduler.take_completed_epochs().empty());  // epoch 1 first, in order
  // The held partition is never handed out: worker 1 gets epoch 3's partitions 1 and 2.
  std::set<std::pair<std::int64_t, std::int64_t>> granted;
  while (auto grant = scheduler.next(1)) {
    granted.insert({grant->epoch, grant->partition});
    scheduler.complete(1);
  }
  EXPECT_EQ(granted, (std::set<std::pair<std::int64_t, std::int64_t>>{{3, 1}, {3, 2}}));
  EXPECT_FALSE(scheduler.all_done());
  scheduler.complete(2);
  EXPECT_EQ(scheduler.take_completed_epochs(), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_TRUE(scheduler.all_done());
  EXPECT_EQ(scheduler.minibatches_in(1), 5);
  EXPECT_EQ(scheduler.minibatches_in(2), 5);
}

// A partition finished twice (held by a worker when it was already done) counts once toward
// its epoch's completion.
TEST(PartitionScheduler, PartitionDoneTwiceCompletesItsEpochOnce) {
  PartitionScheduler scheduler(2, 2, gradshare::runtime::DataPosition{0, {0}});
  scheduler.adopt_in_flight(1, {0, 0});
  scheduler.complete(1);
  EXPECT_TRUE(scheduler.take_completed_epochs().empty());
  ASSERT_EQ(scheduler.next(1)->partition, 1);
  scheduler.complete(1);
  EXPECT_EQ(scheduler.take_completed_epochs(), (std::vector<std::int64_t>{0}));
}

TEST(PartitionScheduler, PositionRoundTripsThroughAResume) {
  using gradshare::runtime::DataPosition;
  PartitionScheduler first(3, 4);
  // Epoch 0 done; epoch 1: partitions 0 and 2 done, 1 in flight and lost.
  for (int i = 0; i < 4; ++i) {
    first.next(1);
    first.complete(1);
  }
  first.next(1);
  first.complete(1);  // (1, 0)
  first.next(2);      // (1, 1) in flight
  first.next(1);
  first.complete(1);  // (1, 2)
  const DataPosition position = first.position();
  EXPECT_EQ(position.first_epoch, 1);
  EXPECT_EQ(position.partitions_done, (std::vector<std::int64_t>{0, 2}));

  PartitionScheduler resumed(3, 4, position);
  std::set<std::pair<std::int64_t, std::int64_t>> granted;
  while (auto grant = resumed.next(1)) {
    granted.insert({grant->epoch, grant->partition});
    resumed.complete(1);
  }
  std::set<std::pair<std::int64_t, std::int64_t>> expected{{1, 1}, {1, 3}};
  for (int p = 0; p < 4; ++p) expected.insert({2, p});
  EXPECT_EQ(granted, expected);
  EXPECT_TRUE(resumed.all_done());
}

// A checkpoint at a cut leaves out partitions finished past it, even the one that completed an
// epoch (the position goes back to that epoch).
TEST(PartitionScheduler, PositionWithoutPartitionsFinishedPastACut) {
  using gradshare::runtime::DataPosition;
  using gradshare::runtime::PartitionGrant;
  PartitionScheduler scheduler(3, 4);
  for (int i = 0; i < 5; ++i) {  // epoch 0 whole, then (1, 0)
    scheduler.next(1);
    scheduler.complete(1);
  }
  const DataPosition all = scheduler.position();
  EXPECT_EQ(all.first_epoch, 1);
  EXPECT_EQ(all.partitions_done, (std::vector<std::int64_t>{0}));
  const DataPosition without_last = scheduler.position_without({PartitionGrant{1, 0}});
  EXPECT_EQ(without_last.first_epoch, 1);
  EXPECT_TRUE(without_last.partitions_done.empty());
  const DataPosition without_epoch_end =
      scheduler.position_without({PartitionGrant{0, 3}, PartitionGrant{1, 0}});
  EXPECT_EQ(without_epoch_end.first_epoch, 0);
  EXPECT_EQ(without_epoch_end.partitions_done, (std::vector<std::int64_t>{0, 1, 2}));
}

TEST(PartitionScheduler, CountsTrainedMinibatchesPerEpoch) {
  PartitionScheduler scheduler(2, 3, {}, {20, 20, 7});
  for (int p = 0; p < 3; ++p) {
    ASSERT_TRUE(scheduler.next(1).has_value());
    scheduler.complete(1);
  }
  EXPECT_EQ(scheduler.minibatches_in(0), 47);
  EXPECT_EQ(scheduler.minibatches_in(1), 0);
  // A resumed run counts the partitions done before the checkpoint once, from its position.
  PartitionScheduler resumed(2, 3, gradshare::runtime::DataPosition{1, {0, 2}}, {20, 20, 7});
  EXPECT_EQ(resumed.minibatches_in(1), 27);
}

TEST(PartitionScheduler, ReopenedPartitionIsTrainedAgainAndCountedTwice) {
  PartitionScheduler scheduler(1, 3, {}, {20, 20, 7});
  const auto first = scheduler.next(1);
  ASSERT_TRUE(first.has_value());
  scheduler.complete(1);
  // Its worker died before its updates reached anyone: it goes out again, before the rest.
  EXPECT_TRUE(scheduler.reopen(*first));
  EXPECT_FALSE(scheduler.reopen(*first));  // not done any more
  const auto again = scheduler.next(2);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->partition, first->partition);
  scheduler.complete(2);
  for (int p = 0; p < 2; ++p) {
    ASSERT_TRUE(scheduler.next(2).has_value());
    scheduler.complete(2);
  }
  EXPECT_TRUE(scheduler.all_done());
  EXPECT_EQ(scheduler.minibatches_in(0), 67);
  // A complete epoch is not reopened: its record is written already.
  EXPECT_FALSE(scheduler.reopen(*first));
  EXPECT_EQ(scheduler.take_completed_epochs(), std::vector<std::int64_t>{0});
}

// data.prefetch_partitions: each grant comes with the worker's next partition reserved; its
// next request gets exactly that one, every partition is still trained once, and a dead
// worker's reservation goes back to the queue ahead of the rest.
TEST(PartitionScheduler, ReservesTheNextPartitionForReadAhead) {
  PartitionScheduler scheduler(2, 3, {}, {}, /*reserve_ahead=*/1);
  std::set<std::pair<std::int64_t, std::int64_t>> trained;
  auto first = scheduler.next(1);
  ASSERT_TRUE(first);
  auto reserved = scheduler.reserved(1);
  ASSERT_EQ(reserved.size(), 1u);
  EXPECT_EQ(reserved[0].partition, first->partition + 1);
  auto other = scheduler.next(2);  // the reservation is not handed to anyone else
  ASSERT_TRUE(other);
  EXPECT_EQ(other->partition, 2);
  trained.insert({first->epoch, first->partition});
  trained.insert({other->epoch, other->partition});
  scheduler.complete(1);
  auto second = scheduler.next(1);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->epoch, reserved[0].epoch);
  EXPECT_EQ(second->partition, reserved[0].partition);
  trained.insert({second->epoch, second->partition});
  // Worker 2 dies holding epoch 0 partition 2 with epoch 1 partition 0 reserved; worker 1
  // reserved epoch 1 partition 1 with its second grant.
  EXPECT_EQ(scheduler.reserved(1).at(0).epoch, 1);
  EXPECT_EQ(scheduler.reserved(1).at(0).partition, 1);
  const auto lost_reservation = scheduler.reserved(2);
  ASSERT_EQ(lost_reservation.size(), 1u);
  EXPECT_EQ(lost_reservation[0].partition, 0);
  scheduler.requeue_worker(2);
  EXPECT_TRUE(scheduler.reserved(2).empty());
  scheduler.complete(1);
  auto again = scheduler.next(1);  // its own reservation first
  ASSERT_TRUE(again);
  EXPECT_EQ(again->epoch, 1);
  EXPECT_EQ(again->partition, 1);
  trained.insert({again->epoch, again->partition});
  // Then the dead worker's partition and reservation, in that order, before anything new.
  auto requeued = scheduler.reserved(1);
  ASSERT_EQ(requeued.size(), 1u);
  EXPECT_EQ(requeued[0].epoch, 0);
  EXPECT_EQ(requeued[0].partition, 2);
  trained.erase({0, 2});  // it was never completed
  while (true) {
    scheduler.complete(1);
    auto grant = scheduler.next(1);
    if (!grant) break;
    EXPECT_TRUE(trained.insert({grant->epoch, grant->partition}).second)
        << grant->epoch << "/" << grant->partition << " twice";
  }
  EXPECT_EQ(trained.size(), 6u);
  EXPECT_TRUE(scheduler.all_done());
  EXPECT_TRUE(scheduler.reserved(1).empty());
}

TEST(PartitionMessages, GrantWithReadAheadRoundTripsAndRejectsBadBytes) {
  using gradshare::runtime::PartitionAssignment;
  const PartitionAssignment sent{PartitionGrant{2, 7}, {PartitionGrant{2, 8}, PartitionGrant{3, 0}}};
  using gradshare::train::PartitionGrantReply;
  using gradshare::train::decode;
  using gradshare::train::encode;
  gradshare::comm::ControlMessage message{1, gradshare::train::tags::kPartitionGrant,
                                          encode(PartitionGrantReply{sent})};
  const auto got = decode<PartitionGrantReply>(message).assignment;
  ASSERT_TRUE(got.grant);
  EXPECT_EQ(got.grant->partition, 7);
  ASSERT_EQ(got.read_ahead.size(), 2u);
  EXPECT_EQ(got.read_ahead[1].epoch, 3);
  const auto none =
      decode<PartitionGrantReply>(encode(PartitionGrantReply{PartitionAssignment{}})).assignment;
  EXPECT_FALSE(none.grant);
  EXPECT_TRUE(none.read_ahead.empty());
  // Truncated, trailing bytes, an absurd count: an error, never a crash.
  auto bytes = message.payload;
  for (auto bad : {std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 3),
                   [&] { auto b = bytes; b.push_back(0); return b; }(),
                   [&] { auto b = bytes; b[17] = 0xff; b[18] = 0xff; return b; }()}) {
    message.payload = bad;
    EXPECT_THROW(decode<PartitionGrantReply>(message), std::runtime_error);
  }
  // A message of another tag is refused whatever its bytes.
  message.payload = bytes;
  message.tag = gradshare::train::tags::kPartitionRequest;
  EXPECT_THROW(decode<PartitionGrantReply>(message), std::runtime_error);
}
