// resync_test.cpp: the pieces of recovery after a process failure that need no MPI: applied
// update IDs, the exchange's kept messages and their redelivery (nothing lost, nothing applied
// twice), a replacement's snapshot, the recovery messages' (de)serialization, fault-injection
// syntax, and the tree after a repair.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "codec/encoder.h"
#include "comm/inproc/in_process.h"
#include "config/experiment_config.h"
#include "core/errors.h"
#include "topology/tree.h"
#include "ft/fault_injection.h"
#include "train/sharing/recovery.h"
#include "train/sharing/session.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kParameters = 64;
constexpr std::size_t kKeepBytes = 1 << 20;

// Encoded updates of origin 1, seq 1..count, each moving a few parameters by +-tau.
std::vector<std::vector<std::uint8_t>> messages_from_rank_1(int count) {
  config::EncodingConfig encoding;
  encoding.threshold_algorithm = "fixed";
  encoding.initial_threshold = 0.5;
  codec::Encoder encoder(encoding, kParameters);
  std::vector<std::vector<std::uint8_t>> messages;
  for (int seq = 1; seq <= count; ++seq) {
    std::vector<float> update(kParameters, 0.0f);
    update[static_cast<std::size_t>(seq) % kParameters] = 1.0f;
    update[(static_cast<std::size_t>(seq) * 7) % kParameters] = -1.0f;
    std::vector<std::uint8_t> message;
    encoder.encode(update, codec::MessageMeta{1, static_cast<std::uint64_t>(seq), 0, 0, 0}, message);
    messages.push_back(message);
  }
  return messages;
}

struct Replicas {
  Replicas() : fabric(3, topology::build_plain(3), 1 << 16) {}
  comm::InProcessFabric fabric;
  UpdateExchange master{fabric.plane(0), 0, 3, kParameters, kKeepBytes};
  UpdateExchange sender{fabric.plane(1), 1, 3, kParameters, kKeepBytes};
  std::vector<float> master_parameters = std::vector<float>(kParameters, 0.0f);
  std::vector<float> sender_parameters = std::vector<float>(kParameters, 0.0f);
};

TEST(AppliedIds, RoundTripAndContains) {
  AppliedIds ids;
  ids.upto = {0, 5, 2};
  ids.above = {{}, {7, 9}, {}};
  const auto back = AppliedIds::deserialize(ids.serialize());
  EXPECT_EQ(back.upto, ids.upto);
  EXPECT_EQ(back.above, ids.above);
  EXPECT_TRUE(back.contains(1, 5));
  EXPECT_FALSE(back.contains(1, 6));
  EXPECT_TRUE(back.contains(1, 9));
  EXPECT_EQ(back.highest(1), 9u);
  EXPECT_EQ(back.highest(2), 2u);
  EXPECT_FALSE(back.contains(7, 1));  // an origin it does not know
}

TEST(AppliedIds, RejectsMalformedBytes) {
  AppliedIds ids;
  ids.upto = {0, 1};
  ids.above = {{}, {9, 4}};  // out of order
  EXPECT_THROW(AppliedIds::deserialize(ids.serialize()), core::RuntimeError);
  auto bytes = AppliedIds{{3}, {{}}}.serialize();
  bytes.pop_back();
  EXPECT_THROW(AppliedIds::deserialize(bytes), core::RuntimeError);
}

// Messages the master never got (in flight on a plane that was abandoned) come back from the
// sender's kept messages; afterwards both replicas are equal and nothing was applied twice.
TEST(Resync, KeptMessagesFillTheGapOnce) {
  Replicas r;
  const auto messages = messages_from_rank_1(5);
  for (const auto& message : messages) r.sender.publish(message, r.sender_parameters);
  const auto missing = r.sender.kept_missing_from(r.master.applied_ids());
  ASSERT_EQ(missing.size(), 5u);
  for (const auto& message : missing) ASSERT_TRUE(r.master.deliver(message, r.master_parameters));
  EXPECT_EQ(r.master_parameters, r.sender_parameters);
  EXPECT_EQ(r.master.highest_applied(1), 5u);
  // Delivered again (a message that also arrived another way): counted, not applied.
  const auto before = r.master_parameters;
  for (const auto& message : missing) ASSERT_TRUE(r.master.deliver(message, r.master_parameters));
  EXPECT_EQ(r.master_parameters, before);
  EXPECT_EQ(r.master.stats().duplicates, 5u);
  EXPECT_EQ(r.master.applied_twice(), 0);
  EXPECT_EQ(r.sender.applied_twice(), 0);
  EXPECT_TRUE(r.sender.kept_missing_from(r.master.applied_ids()).empty());
}

// Messages out of order (a redelivery ahead of the live ones): each applied once, whichever
// way the IDs are held (in order as a count, beyond a gap as a set), and the gap filled.
TEST(Resync, OutOfOrderMessagesAreEachAppliedOnce) {
  Replicas r;
  const auto messages = messages_from_rank_1(6);
  for (const int seq : {1, 2, 5, 3, 5, 6, 1, 4, 6}) {
    ASSERT_TRUE(r.master.deliver(messages[static_cast<std::size_t>(seq - 1)], r.master_parameters));
    if (seq == 3) {
      EXPECT_TRUE(r.master.applied_ids().contains(1, 5));
      EXPECT_FALSE(r.master.applied_ids().contains(1, 4));
    }
  }
  for (const auto& message : messages) r.sender.publish(message, r.sender_parameters);
  EXPECT_EQ(r.master_parameters, r.sender_parameters);
  EXPECT_EQ(r.master.stats().applied, 6u);
  EXPECT_EQ(r.master.stats().duplicates, 3u);
  EXPECT_EQ(r.master.applied_twice(), 0);
  EXPECT_EQ(r.master.highest_applied(1), 6u);
  EXPECT_EQ(r.master.applied_ids().upto[1], 6u);
  EXPECT_TRUE(r.master.applied_ids().above[1].empty());
}

TEST(Resync, DeliverRejectsBadBytes) {
  Replicas r;
  std::vector<std::uint8_t> garbage(50, 0xAB);
  EXPECT_FALSE(r.master.deliver(garbage, r.master_parameters));
  EXPECT_EQ(r.master.stats().rejected, 1u);
  EXPECT_EQ(r.master_parameters, std::vector<float>(kParameters, 0.0f));
}

// A replacement takes the master's snapshot: updates in it are not applied again, later ones are.
TEST(Resync, ReplacementSnapshot) {
  Replicas r;
  const auto messages = messages_from_rank_1(4);
  for (int i = 0; i < 3; ++i) r.master.deliver(messages[static_cast<std::size_t>(i)], r.master_parameters);
  comm::InProcessFabric other(3, topology::build_plain(3), 1 << 16);
  UpdateExchange replacement(other.plane(2), 2, 3, kParameters, kKeepBytes);
  std::vector<float> parameters = r.master_parameters;
  replacement.restore(r.master.applied_ids());
  EXPECT_EQ(replacement.applied_twice(), 0);
  ASSERT_TRUE(replacement.deliver(messages[1], parameters));  // in the snapshot
  EXPECT_EQ(parameters, r.master_parameters);
  ASSERT_TRUE(replacement.deliver(messages[3], parameters));  // newer
  r.master.deliver(messages[3], r.master_parameters);
  EXPECT_EQ(parameters, r.master_parameters);
  EXPECT_EQ(replacement.applied_twice(), 0);
}

// Peer messages are kept within the byte budget, newest first, whatever their origin; a
// replica's own newest messages are kept besides it.
TEST(Resync, KeptPeerMessagesStayWithinTheBudget) {
  comm::InProcessFabric fabric(3, topology::build_plain(3), 1 << 16);
  const auto messages = messages_from_rank_1(20);
  const std::size_t budget = messages[18].size() + messages[19].size();
  UpdateExchange master(fabric.plane(0), 0, 3, kParameters, budget);
  UpdateExchange sender(fabric.plane(1), 1, 3, kParameters, 0);
  std::vector<float> master_parameters(kParameters, 0.0f), sender_parameters(kParameters, 0.0f);
  for (const auto& message : messages) {
    ASSERT_TRUE(master.deliver(message, master_parameters));
    sender.publish(message, sender_parameters);
  }
  EXPECT_LE(master.stats().kept_bytes_peak, budget);
  const auto kept = master.kept_missing_from(AppliedIds{{0, 0, 0}, {{}, {}, {}}});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0], messages[18]);
  EXPECT_EQ(kept[1], messages[19]);
  EXPECT_FALSE(master.kept(1, 18).has_value());
  // Budget 0 keeps no peer message, but the sender keeps its own 16 newest.
  EXPECT_EQ(sender.kept_missing_from(AppliedIds{{0, 0, 0}, {{}, {}, {}}}).size(), 16u);
  EXPECT_TRUE(sender.kept(1, 20).has_value());
  EXPECT_FALSE(sender.kept(1, 4).has_value());
}

// A replica lacking updates nobody keeps any more takes the master's whole state: afterwards
// the two are equal, nothing was applied twice, and later updates apply once.
TEST(Resync, WholeStateStandsInForUpdatesNoLongerKept) {
  comm::InProcessFabric fabric(3, topology::build_plain(3), 1 << 16);
  UpdateExchange master(fabric.plane(0), 0, 3, kParameters, 0);
  UpdateExchange lagging(fabric.plane(2), 2, 3, kParameters, 0);
  std::vector<float> master_parameters(kParameters, 0.0f), lagging_parameters(kParameters, 0.0f);
  const auto messages = messages_from_rank_1(4);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(master.deliver(messages[static_cast<std::size_t>(i)], master_parameters));
  ASSERT_TRUE(lagging.deliver(messages[0], lagging_parameters));
  EXPECT_TRUE(master.kept_missing_from(lagging.applied_ids()).empty());  // not kept: budget 0

  const ReplicaState sent{master_parameters, master.applied_ids()};
  const auto state = decode<ReplicaState>(encode(sent));
  lagging_parameters = state.parameters;
  lagging.adopt(state.applied);
  EXPECT_EQ(lagging_parameters, master_parameters);
  EXPECT_EQ(lagging.applied_twice(), 0);
  ASSERT_TRUE(lagging.deliver(messages[1], lagging_parameters));  // in the state: not again
  EXPECT_EQ(lagging_parameters, master_parameters);
  ASSERT_TRUE(lagging.deliver(messages[3], lagging_parameters));
  ASSERT_TRUE(master.deliver(messages[3], master_parameters));
  EXPECT_EQ(lagging_parameters, master_parameters);
  EXPECT_EQ(lagging.applied_twice(), 0);
  auto truncated = encode(sent);
  truncated.pop_back();
  EXPECT_THROW(decode<ReplicaState>(truncated), core::RuntimeError);
}

TEST(RecoveryMessages, RoundTrip) {
  ResyncStatus status;
  status.phase = WorkerPhase::kRequesting;
  status.finished = runtime::PartitionGrant{1, 7};
  status.last_seq = 42;
  status.applied = AppliedIds{{0, 3}, {{}, {5}}};
  status.done = {runtime::PartitionGrant{0, 5}, runtime::PartitionGrant{1, 7}};
  status.clock = 123;
  status.tau = 2e-3f;
  const auto back = decode<ResyncStatus>(encode(status));
  ASSERT_EQ(back.done.size(), 2u);
  EXPECT_EQ(back.done[1].epoch, 1);
  EXPECT_EQ(back.done[1].partition, 7);
  EXPECT_EQ(back.clock, 123u);
  EXPECT_EQ(back.tau, 2e-3f);
  EXPECT_EQ(back.phase, WorkerPhase::kRequesting);
  EXPECT_FALSE(back.holding.has_value());
  ASSERT_TRUE(back.finished.has_value());
  EXPECT_EQ(back.finished->partition, 7);
  EXPECT_EQ(back.last_seq, 42u);
  EXPECT_EQ(back.applied.above, status.applied.above);

  const std::vector<UpdateId> ids{{1, 4}, {3, 9}};
  EXPECT_EQ(decode<ResyncFetch>(encode(ResyncFetch{ids})).ids, ids);
  const std::vector<std::vector<std::uint8_t>> messages{{1, 2, 3}, {}};
  EXPECT_EQ(decode<ResyncUpdates>(encode(ResyncUpdates{messages})).messages, messages);

  auto bad = encode(status);
  bad[0] = 9;  // no such phase
  EXPECT_THROW(decode<ResyncStatus>(bad), core::RuntimeError);
  std::vector<std::uint8_t> huge_count(8, 0xFF);
  EXPECT_THROW(decode<ResyncFetch>(huge_count), core::RuntimeError);
}

TEST(FaultInjection, ParsesTheEnvironmentSyntax) {
  const auto parsed = ft::parse_injections("2:300:sigkill,3:0:hang,1:-1:exit");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].rank, 2);
  EXPECT_EQ(parsed[0].at_step, 300);
  EXPECT_EQ(parsed[1].kind, "hang");
  EXPECT_EQ(parsed[2].at_step, -1);  // right after handing in its results
  for (const char* bad :
       {"2:300", "0:5:sigkill", "2:x:exit", "2:5:explode", "2:5:exit:9", "2:-2:sigkill"})
    EXPECT_THROW(ft::parse_injections(bad), core::UserError) << bad;
}

TEST(RepairedTree, MeshInnerNodeReplacedAsALeaf) {
  config::TopologyConfig topology;
  topology.mode = "mesh";
  topology.max_children = 2;
  topology.max_depth = 5;
  const auto tree = topology::build_mesh(7, 2, 5);
  ASSERT_EQ(tree.children[1], (std::vector<int>{3, 4}));
  const auto repaired = repaired_tree(topology, topology::Mode::kMesh, tree, {1}, {1});
  EXPECT_TRUE(repaired.children[1].empty());  // back as a leaf
  EXPECT_TRUE(repaired.is_live(1));
  for (int child : {3, 4}) EXPECT_NE(repaired.parent[static_cast<std::size_t>(child)], 1);
  EXPECT_EQ(repaired.version, tree.version + 2);
  for (int rank = 1; rank < 7; ++rank) EXPECT_TRUE(repaired.is_live(rank)) << rank;
}

TEST(RepairedTree, PlainShrinkDropsTheRank) {
  config::TopologyConfig topology;
  const auto repaired = repaired_tree(topology, topology::Mode::kPlain, topology::build_plain(5), {2}, {});
  EXPECT_FALSE(repaired.is_live(2));
  EXPECT_EQ(repaired.links(0), (std::vector<int>{1, 3, 4}));
}

}  // namespace
}  // namespace gradshare::train
