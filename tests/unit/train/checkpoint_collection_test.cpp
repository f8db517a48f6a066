// checkpoint_collection_test.cpp: the gradient-sharing master's checkpoint collection
// (sharing/checkpoint_collection.h) against a scripted channel: what it asks, what it
// acknowledges, which pieces it ignores, when a worker's reply is complete, and what a repair's
// end() leaves; and the drain's bookkeeping (sharing/drain.h) as workers finish, drain and are
// lost.
#include <gtest/gtest.h>

#include <vector>

#include "scripted_session.h"
#include "train/sharing/checkpoint_collection.h"
#include "train/sharing/drain.h"

namespace gradshare::train {
namespace {

using testing::ScriptedChannel;

// Worker w's StateReply {sent_seq, tau = w}, cut in `pieces` pieces.
std::vector<StateChunk> reply_pieces(int worker, std::uint64_t sent_seq, std::uint32_t pieces) {
  StateReply reply;
  reply.sent_seq = sent_seq;
  reply.state.tau = static_cast<float>(worker);
  reply.state.residual = std::vector<float>(64, 0.25f);
  const auto bytes = encode(reply);
  std::vector<StateChunk> chunks;
  const std::size_t each = (bytes.size() + pieces - 1) / pieces;
  for (std::uint32_t i = 0; i < pieces; ++i) {
    const auto from = bytes.begin() + static_cast<std::ptrdiff_t>(std::min(bytes.size(), i * each));
    const auto to =
        bytes.begin() + static_cast<std::ptrdiff_t>(std::min(bytes.size(), (i + 1) * each));
    chunks.push_back({1, sent_seq, i, pieces, {from, to}});
  }
  return chunks;
}

TEST(CheckpointCollection, AsksEveryWorkerAndCompletesEachReplyAtItsLastPiece) {
  ScriptedChannel channel(0, 3);
  CheckpointCollection collection;
  const std::vector<float> parameters(8, 1.0f);
  collection.start(parameters, {1, 2}, 40, channel);
  EXPECT_TRUE(collection.under_way());
  EXPECT_EQ(collection.steps(), 40);
  const auto requests = channel.sent_of<CheckpointRequest>();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].iteration, 40);
  EXPECT_TRUE(requests[0].parts) << "workers write their parts unless the master cannot see them";

  const auto one = reply_pieces(1, 7, 3), two = reply_pieces(2, 9, 1);
  collection.take_piece(1, one[0], channel);
  collection.take_piece(1, one[1], channel);
  EXPECT_FALSE(collection.replied({1}));
  EXPECT_TRUE(collection.cut().has_cut(1));  // the first piece tells the cut
  collection.take_piece(1, one[2], channel);
  collection.take_piece(2, two[0], channel);
  EXPECT_TRUE(collection.replied({1, 2}));
  EXPECT_EQ(channel.sent_of<StateChunkAck>().size(), 4u);  // every piece acknowledged

  const auto replies = collection.take_replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies.at(1).sent_seq, 7u);
  EXPECT_EQ(replies.at(2).state.tau, 2.0f);
  EXPECT_EQ(replies.at(1).state.residual.size(), 64u);
}

TEST(CheckpointCollection, CountsTheStateBytesItTookInAndTheCollections) {
  ScriptedChannel channel(0, 3);
  CheckpointCollection collection;
  const auto one = reply_pieces(1, 7, 3), two = reply_pieces(2, 9, 1);
  std::int64_t sent = 0;
  for (const auto& piece : one) sent += static_cast<std::int64_t>(piece.bytes.size());
  sent += static_cast<std::int64_t>(two[0].bytes.size());
  collection.start(std::vector<float>(8, 0.0f), {1, 2}, 0, channel);
  collection.take_piece(1, two[0], channel);  // worker 1 sends worker 2's piece: still bytes
  collection.end();                           // a repair abandons it: they crossed the link
  collection.start(std::vector<float>(8, 0.0f), {1, 2}, 0, channel);
  collection.take_piece(3, two[0], channel);  // not asked: ignored, not counted
  for (const auto& piece : one) collection.take_piece(1, piece, channel);
  EXPECT_EQ(collection.started(), 2);
  EXPECT_EQ(collection.state_bytes(), sent);
}

TEST(CheckpointCollection, IgnoresPiecesNobodyAskedForOrOutOfOrder) {
  ScriptedChannel channel(0, 4);
  CheckpointCollection collection;
  collection.take_piece(1, reply_pieces(1, 7, 1)[0], channel);  // nothing under way
  collection.start(std::vector<float>(8, 0.0f), {1, 2}, 0, channel);
  collection.take_piece(3, reply_pieces(3, 7, 1)[0], channel);  // not asked
  collection.take_piece(1, reply_pieces(1, 7, 2)[1], channel);  // its second piece first
  EXPECT_TRUE(channel.sent_of<StateChunkAck>().empty());
  EXPECT_FALSE(collection.replied({1}));
  EXPECT_FALSE(collection.cut().has_cut(1));
}

TEST(CheckpointCollection, CountsPartitionsFinishedPastACutOnly) {
  ScriptedChannel channel(0, 3);
  CheckpointCollection collection;
  collection.start(std::vector<float>(8, 0.0f), {1, 2}, 0, channel);
  collection.take_piece(1, reply_pieces(1, 7, 2)[0], channel);  // worker 1's cut is known
  collection.finished(1, runtime::PartitionGrant{0, 3});
  collection.finished(2, runtime::PartitionGrant{0, 4});  // worker 2's reply has not begun
  ASSERT_EQ(collection.finished_past_cut().size(), 1u);
  EXPECT_EQ(collection.finished_past_cut()[0].partition, 3);
}

TEST(CheckpointCollection, EndSaysWhetherOneWasAskedAndKeepsTheOneDueAgain) {
  ScriptedChannel channel(0, 2);
  CheckpointCollection collection;
  EXPECT_FALSE(collection.end());
  collection.start(std::vector<float>(8, 0.0f), {1}, 0, channel);
  collection.due_again();
  EXPECT_TRUE(collection.end());
  EXPECT_FALSE(collection.under_way());
  EXPECT_TRUE(collection.take_due_again());
  EXPECT_FALSE(collection.take_due_again());
}

// A repair asks for the abandoned one again, which covers one that came due meanwhile.
TEST(CheckpointCollection, AbandonedForARepairItDropsTheOneDueAgain) {
  ScriptedChannel channel(0, 2);
  CheckpointCollection collection;
  EXPECT_FALSE(collection.abandon());
  collection.start(std::vector<float>(8, 0.0f), {1}, 0, channel);
  collection.due_again();
  EXPECT_TRUE(collection.abandon());
  EXPECT_FALSE(collection.under_way());
  EXPECT_FALSE(collection.take_due_again());
}

TEST(SharingDrain, TargetsGoOnceEveryLiveWorkerIsDoneAndALostOneIsForgotten) {
  SharingDrain drain(4);
  drain.done(1, SharingDone{10, 0.0, 0});
  drain.done(2, SharingDone{12, 0.0, 0});
  EXPECT_FALSE(drain.ready_to_send({1, 2, 3}));
  drain.done(3, SharingDone{11, 0.0, 0});
  EXPECT_TRUE(drain.ready_to_send({1, 2, 3}));
  drain.forget(3);
  EXPECT_FALSE(drain.ready_to_send({1, 2, 3}));
  EXPECT_TRUE(drain.ready_to_send({1, 2}));

  DrainedReport report;
  report.applied_twice = 2;
  report.parameters = {1.0f, 2.0f};
  drain.drained(1, report);
  report.applied_twice = 1;
  drain.drained(2, report);
  EXPECT_EQ(drain.applied_twice(), 3);
  EXPECT_EQ(drain.models().size(), 2u);
  EXPECT_EQ(drain.relays().size(), 2u);
  drain.forget(2);  // lost after it drained: its counters go with it
  EXPECT_EQ(drain.relays().count(2), 0u);
  EXPECT_EQ(drain.applied_twice(), 2);
  drain.restart();  // a repair: everyone reports anew
  EXPECT_EQ(drain.done_count(), 0u);
  EXPECT_EQ(drain.drained_count(), 0u);
  EXPECT_EQ(drain.applied_twice(), 0);
  EXPECT_TRUE(drain.relays().empty());
  EXPECT_FALSE(drain.targets_sent());
}

}  // namespace
}  // namespace gradshare::train
