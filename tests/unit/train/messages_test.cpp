// messages_test.cpp: every control payload round-trips (decoding its bytes and encoding again
// gives the same bytes, and the fields checked come back), and malformed bytes are refused with
// a RuntimeError, never a crash: a byte missing, a byte left over, a message of another tag.
// One tag, one payload: no two payload types share a tag.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"
#include "train/allreduce/protocol.h"
#include "train/averaging/protocol.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_rebuild.h"
#include "train/group_recovery.h"
#include "train/messages.h"
#include "train/partition_messages.h"
#include "train/sharing/protocol.h"
#include "train/sharing/recovery.h"
#include "train/sharing/report.h"
#include "train/sharing/takeover.h"
#include "train/worker_state.h"

namespace gradshare::train {
namespace {

WorkerState sample_state() {
  WorkerState state;
  state.optimizer_step = 12;
  state.tau = 1e-3f;
  state.residual = {0.5f, -0.25f};
  state.optimizer_state = {{"m", {1.0f, 2.0f}}, {"v", {3.0f}}};
  return state;
}

// Every payload with a sample value (the signals carry nothing).
auto samples() {
  AveragingReport averaging_report;
  averaging_report.steps = 3;
  averaging_report.rounds = 2;
  DownpourReport downpour_report;
  downpour_report.pushes = 7;
  SharingReport sharing_report;
  sharing_report.messages = 9;
  DrainedReport drained;
  drained.applied_twice = 0;
  drained.flush_messages = 3;
  drained.flush_bytes = 120;
  drained.parameters = {1.0f, 2.0f};
  ResyncStatus status;
  status.phase = WorkerPhase::kTraining;
  status.holding = runtime::PartitionGrant{1, 4};
  status.last_seq = 5;
  status.applied = AppliedIds{{0, 3}, {{}, {5}}};
  status.done = {runtime::PartitionGrant{0, 2}, runtime::PartitionGrant{1, 3}};
  status.clock = 40;
  status.tau = 1e-3f;
  runtime::PartitionAssignment assignment{runtime::PartitionGrant{2, 7},
                                          {runtime::PartitionGrant{2, 8}}};
  return std::make_tuple(
      StateRequest{}, StateChunkAck{4, 2}, Finish{}, Heartbeat{}, PeakMemoryRequest{},
      ResyncStateFetch{}, StateChunk{4, 9, 1, 3, {1, 2, 3}}, ResyncDone{}, DownpourFinalPull{},
      Shutdown{75}, Diverged{12, "loss exploded"}, PeakMemoryReport{1 << 20},
      EpochModel{1, 22, 7, {0.5f, 1.5f}}, Start{4, StartState{true, {1.0f}, sample_state()}},
      AllreduceProgress{8, 0.5, 0.9, 1000.0, 1e-3, "epoch 1/2"},
      AllreduceSnapshot{8, 60, {1.0f, 2.0f}, sample_state()},
      AllreduceFinal{false, 44, 12, {3.0f}, 99}, averaging_report,
      AveragingSnapshot{true, 64, {1.0f}, sample_state()},
      AveragingDone{averaging_report, AveragingTotals{4, 4, 0}, 77, 9, {}}, downpour_report,
      DownpourState{sample_state(),
                    ShardSnapshot{1, 30, {1.0f, 2.0f}, sample_state(), {4, 5}, {{}, {28, 30}}}},
      DownpourDone{downpour_report, 55},
      DownpourShardRebuild{ShardSnapshot{1, 30, {1.0f}, WorkerState{}, {4}, {{29}}}},
      DownpourPushLog{6,
                      2,
                      {LoggedPush{PushHeader{5, 1, 3, 28}, {1, 2, 3}, 7, 36},
                       LoggedPush{PushHeader{6, 2, 0, 29}, {}, std::nullopt, 0}}},
      DownpourSnapshotTaken{{0, 5}}, DownpourSnapshotWanted{},
      DownpourRebuildFailed{"cannot be rebuilt"}, DownpourFinalModel{{1.0f, 2.0f}, {3, 4}},
      SharingDone{17, 1e-7, 33}, SharingDrainTarget{{0, 4, 6}, 3}, sharing_report, drained,
      StateReply{6, sample_state(), "ckpt-000000000040.parts/worker-2.h5", 4096},
      CheckpointRequest{40, true}, status, ReplicaState{{1.0f, 2.0f}, AppliedIds{{0, 2}, {{}, {}}}},
      ReplacementStart{ReplicaState{{1.0f}, AppliedIds{{0, 1}, {{}, {}}}},
                       sample_state(),
                       9,
                       {runtime::PartitionGrant{0, 1}}},
      RelayRestart{{1.0f, 2.0f}, 7}, RelayUpwardFetch{}, RelayUpward{{1.0f, 2.0f}, {0.5f, -0.25f}},
      ResyncFetch{{{1, 2}, {2, 5}}}, ResyncUpdates{{{1, 2, 3}, {}}}, PartitionRequest{true, 8},
      PartitionGrantReply{assignment}, GroupResume{true, false, 3, 120}, DownpourResync{41},
      DownpourResume{true, false, {runtime::PartitionGrant{1, 2}}},
      DownpourTakeoverStatus{{runtime::PartitionGrant{0, 3}, runtime::PartitionGrant{1, 0}}},
      DownpourServerEnd{1 << 20, {5, 6, 7}});
}

template <typename M>
void check_payload(const M& message) {
  const comm::Tag other_tag =
      M::kTag == tags::kHeartbeat ? tags::kShutdown : tags::kHeartbeat;
  const auto bytes = encode(message);
  const M back = decode<M>(bytes);
  EXPECT_EQ(encode(back), bytes) << tag_name(M::kTag);
  // A byte missing, a byte left over.
  if (!bytes.empty()) {
    const std::vector<std::uint8_t> short_bytes(bytes.begin(), bytes.end() - 1);
    EXPECT_THROW(decode<M>(short_bytes), core::RuntimeError) << tag_name(M::kTag);
  }
  auto long_bytes = bytes;
  long_bytes.push_back(0);
  EXPECT_THROW(decode<M>(long_bytes), core::RuntimeError) << tag_name(M::kTag);
  // The same bytes under another tag are not this payload.
  EXPECT_THROW(decode<M>(comm::ControlMessage{1, other_tag, bytes}), core::RuntimeError);
  EXPECT_NO_THROW(decode<M>(comm::ControlMessage{1, M::kTag, bytes}));
}

TEST(Messages, EveryPayloadRoundTripsAndRefusesMalformedBytes) {
  std::apply([](const auto&... message) { (check_payload(message), ...); }, samples());
}

TEST(Messages, OneTagOnePayload) {
  std::set<comm::Tag> tags;
  std::size_t payloads = 0;
  std::apply(
      [&](const auto&... message) {
        ((tags.insert(std::decay_t<decltype(message)>::kTag), ++payloads), ...);
      },
      samples());
  EXPECT_EQ(tags.size(), payloads);
  // And every tag of tags.h has a payload here.
  EXPECT_EQ(tags.size(), static_cast<std::size_t>(kTagCount));
}

TEST(Messages, EveryTagHasItsOwnName) {
  std::set<std::string> names;
  for (int number = 1; number <= kTagCount; ++number)
    names.insert(tag_name(static_cast<comm::Tag>(number)));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kTagCount));
  EXPECT_EQ(tag_name(tags::kPartitionGrant), "partition grant");
  const auto unknown = static_cast<comm::Tag>(kTagCount + 1);
  EXPECT_EQ(tag_name(unknown), "tag " + std::to_string(kTagCount + 1));
  // The channels' errors use the same names.
  EXPECT_EQ(comm::tag_label(tags::kStart), "start");
}

TEST(Messages, FieldsComeBack) {
  const auto start = decode<Start>(encode(Start{4, StartState{true, {1.0f}, sample_state()}}));
  EXPECT_EQ(start.step, 4);
  EXPECT_TRUE(start.state.resume);
  EXPECT_EQ(start.state.worker.optimizer_state.size(), 2u);
  EXPECT_EQ(start.state.worker.residual, (std::vector<float>{0.5f, -0.25f}));
  const auto diverged = decode<Diverged>(encode(Diverged{12, "loss exploded"}));
  EXPECT_EQ(diverged.reason, "loss exploded");
  const auto grant =
      decode<PartitionGrantReply>(encode(PartitionGrantReply{{runtime::PartitionGrant{2, 7}, {}}}));
  ASSERT_TRUE(grant.assignment.grant);
  EXPECT_EQ(grant.assignment.grant->partition, 7);
  // A relay restart's three kinds of parent: died, took in up to a seq, took everything.
  EXPECT_FALSE(decode<RelayRestart>(encode(RelayRestart{{1.0f}, std::nullopt})).parent_applied);
  EXPECT_EQ(decode<RelayRestart>(encode(RelayRestart{{1.0f}, 7})).parent_applied, 7u);
  const auto took_all = decode<RelayRestart>(encode(RelayRestart{{1.0f}, std::nullopt, true}));
  EXPECT_TRUE(took_all.parent_took_all);
  EXPECT_FALSE(took_all.parent_applied);
  ResyncStatus status;
  status.relay_parent = 3;
  status.relay_base = 0x0123456789abcdefull;
  const auto back = decode<ResyncStatus>(encode(status));
  EXPECT_EQ(back.relay_parent, 3);
  EXPECT_EQ(back.relay_base, 0x0123456789abcdefull);
}

}  // namespace
}  // namespace gradshare::train
