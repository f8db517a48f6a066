// aggregating_relay_test.cpp: the aggregating mesh's relay alone (what each link is owed, when
// its message is due, the clock and idle flag it carries, nothing lost) and the update exchange
// aggregating over in-process rings (one message per link per step, replicas equal to the relay
// residuals' bound after the drain), and the flush rounds that empty the relay residuals (a
// link's final waits for every other link's, carries the residual exactly, in pieces; after a
// round every replica is the same to rounding).
#include "train/sharing/aggregating_relay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "codec/encoder.h"
#include "codec/exact.h"
#include "codec/message.h"
#include "codec/values.h"
#include "comm/inproc/in_process.h"
#include "core/rng.h"
#include "topology/tree.h"
#include "train/sharing/staleness.h"
#include "train/sharing/takeover.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kParameters = 256;
constexpr double kNoWait = std::numeric_limits<double>::infinity();

config::EncodingConfig encoding() {
  config::EncodingConfig e;
  e.check_conservation = true;
  e.min_quanta = 0;
  return e;
}

// A message of origin `origin` moving `elements` by +-0.5, stamped with `clock`.
std::vector<std::uint8_t> message(std::uint32_t origin, std::uint64_t clock,
                                  const std::vector<std::size_t>& elements,
                                  std::uint32_t flags = 0) {
  config::EncodingConfig fixed;
  fixed.threshold_algorithm = "fixed";
  fixed.initial_threshold = 0.5;
  codec::Encoder encoder(fixed, kParameters);
  std::vector<float> update(kParameters, 0.0f);
  for (std::size_t i = 0; i < elements.size(); ++i) update[elements[i]] = i % 2 ? -0.5f : 0.5f;
  std::vector<std::uint8_t> out;
  encoder.encode(update, {origin, clock + 1, clock, 0, flags}, out);
  return out;
}

codec::ParsedMessage parsed(const std::vector<std::uint8_t>& bytes) {
  codec::ParsedMessage p;
  std::string error;
  EXPECT_TRUE(codec::parse_message(bytes, kParameters, p, &error)) << error;
  return p;
}

TEST(AggregatingRelay, OwesEveryLinkButTheSource) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, false);
  const auto m = message(5, 7, {3, 9});
  relay.contribute(1, parsed(m), 0.0);
  EXPECT_TRUE(relay.owes(0));
  EXPECT_FALSE(relay.owes(1));
  EXPECT_TRUE(relay.owes(2));
  EXPECT_FLOAT_EQ(relay.residual(0)[3], 0.5f);
  EXPECT_FLOAT_EQ(relay.residual(2)[9], -0.5f);
  EXPECT_FLOAT_EQ(relay.residual(1)[3], 0.0f);
}

TEST(AggregatingRelay, DueOnceEveryOtherSourceSpokeOrTheWaitRanOut) {
  // Links 0 and 1, and own training.
  AggregatingRelay relay(encoding(), kParameters, 2, 0.5, true);
  relay.contribute(relay.own_source(), parsed(message(1, 4, {1})), 0.0);
  EXPECT_FALSE(relay.due(0, 0.1)) << "link 1 has not spoken";
  relay.contribute(1, parsed(message(2, 6, {2})), 0.1);
  EXPECT_TRUE(relay.due(0, 0.1));
  EXPECT_FALSE(relay.due(1, 0.1)) << "link 0 has not spoken";
  EXPECT_TRUE(relay.due(1, 0.5)) << "owed since 0.0: the wait ran out";
  EXPECT_DOUBLE_EQ(relay.next_deadline(), 0.5);
}

TEST(AggregatingRelay, AnIdleSourceAndAStoppedTrainingAreNotWaitedFor) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, true);
  relay.contribute(2, parsed(message(3, 1, {4}, kFlagIdle)), 0.0);
  relay.contribute(1, parsed(message(2, 1, {5})), 0.0);
  relay.contribute(relay.own_source(), parsed(message(1, 1, {6})), 0.0);
  ASSERT_TRUE(relay.due(0, 0.0));
  std::vector<std::uint8_t> out;
  relay.encode(0, 1, 1, 0, 0.0, out);
  relay.contribute(1, parsed(message(2, 2, {5})), 0.0);
  EXPECT_FALSE(relay.due(0, 0.0)) << "own training has not spoken since";
  relay.set_training(false);
  EXPECT_TRUE(relay.due(0, 0.0)) << "link 2 is idle, training stopped";
}

TEST(AggregatingRelay, AMessageCarriesTheSlowestTrainingClockAndIdleOnlyWhenAllAre) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, false);
  relay.contribute(1, parsed(message(2, 40, {1, 2})), 0.0);
  relay.contribute(2, parsed(message(3, 25, {3, 4}, kFlagIdle)), 0.0);
  relay.contribute(0, parsed(message(0, 90, {5, 6})), 0.0);
  std::vector<std::uint8_t> out;
  relay.encode(0, 7, 1, 0, 0.0, out);
  const auto to_parent = parsed(out);
  EXPECT_EQ(to_parent.header.origin, 7u);
  EXPECT_EQ(to_parent.header.seq, 1u);
  EXPECT_EQ(to_parent.header.iteration, 40u) << "links 1 and 2: 40, and 25 from an idle source";
  EXPECT_EQ(to_parent.header.flags & kFlagIdle, 0u);
  relay.encode(1, 7, 1, 0, 0.0, out);
  EXPECT_EQ(parsed(out).header.iteration, 90u) << "links 0 and 2: 90, and 25 idle";
  relay.contribute(0, parsed(message(0, 95, {5}, kFlagIdle)), 0.0);
  relay.encode(1, 7, 2, 0, 0.0, out);
  EXPECT_NE(parsed(out).header.flags & kFlagIdle, 0u) << "every source behind link 1 is idle";
  EXPECT_EQ(parsed(out).header.iteration, 25u);
  relay.contribute(2, parsed(message(3, 26, {3})), 0.0);
  relay.encode(0, 7, 2, 0, 0.0, out);
  EXPECT_EQ(parsed(out).header.iteration, 26u) << "link 2 trains again, link 1 at 40";
}

TEST(AggregatingRelay, TheStalenessBoundCountsTwoStepsPerRelayOnTheLongestPath) {
  EXPECT_EQ(aggregated_staleness_bound(2, 1), 4);   // leaf, master, leaf
  EXPECT_EQ(aggregated_staleness_bound(2, 2), 8);   // leaf, inner, master, inner, leaf
  EXPECT_EQ(aggregated_staleness_bound(0, 3), 0);   // no bound stays no bound
}

TEST(AggregatingRelay, TheMastersAggregatesCountInTheStalenessBound) {
  // Relaying, the master never trains and its origin never counts; aggregating, its messages
  // carry the other subtrees' slowest clock.
  StalenessTracker relaying(5, 1, 2);
  relaying.applied(0, 3, false, 10);
  EXPECT_FALSE(relaying.blocking_peer(10).has_value());
  StalenessTracker aggregating(5, 1, 2, true);
  aggregating.applied(0, 3, false, 10);
  ASSERT_TRUE(aggregating.blocking_peer(10).has_value());
  EXPECT_EQ(*aggregating.blocking_peer(10), 0);
  aggregating.applied(0, 8, false, 10);
  EXPECT_FALSE(aggregating.blocking_peer(10).has_value());
}

TEST(AggregatingRelay, NothingIsLost) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, true);
  core::Rng rng(11);
  std::vector<std::uint8_t> out;
  for (int step = 1; step <= 200; ++step) {
    std::vector<std::size_t> elements;
    for (int k = 0; k < 6; ++k) elements.push_back(rng.below(kParameters));
    const std::size_t source = rng.below(4);
    relay.contribute(source, parsed(message(1, static_cast<std::uint64_t>(step), elements)), 0.0);
    if (step % 3 == 0)
      for (std::size_t link = 0; link < 3; ++link)
        if (relay.owes(link)) relay.encode(link, 1, static_cast<std::uint64_t>(step), 0, 0.0, out);
  }
  EXPECT_LE(relay.conservation_error(), 1e-6);
  double held = 0;
  for (std::size_t link = 0; link < 3; ++link)
    for (float r : relay.residual(link)) held += std::abs(r);
  EXPECT_GT(held, 0.0) << "some content stays below tau: the test needs it";
}

// What one message on `link` adds to zeroed parameters.
std::vector<float> fired(AggregatingRelay& relay, std::size_t link, std::uint64_t seq) {
  std::vector<std::uint8_t> out;
  relay.encode(link, 1, seq, 0, 0.0, out);
  std::vector<float> added(kParameters, 0.0f);
  std::string error;
  EXPECT_TRUE(codec::accumulate_message(out, added, &error)) << error;
  return added;
}

// A relay of encoding `e` whose one link (a leaf's, up) has its content: element 1 +1.5,
// element 2 -1.0, element 3 +0.5, and element 7 +1e-3 (from this rank's own training).
AggregatingRelay leaf_owing(const config::EncodingConfig& e) {
  AggregatingRelay relay(e, kParameters, 1, kNoWait, true);
  for (const auto& elements : std::vector<std::vector<std::size_t>>{{1, 2, 3}, {1, 2}, {1}})
    relay.contribute(relay.own_source(), parsed(message(5, 1, elements)), 0.0);
  std::vector<float> content(kParameters, 0.0f);
  content[7] = 1e-3f;
  relay.owe_everywhere(content, 0.0);
  return relay;
}

TEST(AggregatingRelay, ALeafsLinkSendsEverythingItOwesInOneMessage) {
  auto relay = leaf_owing(encoding());
  const auto added = fired(relay, 0, 1);
  EXPECT_FLOAT_EQ(added[1], 1.5f);  // whole values, not quanta
  EXPECT_FLOAT_EQ(added[2], -1.0f);
  EXPECT_FLOAT_EQ(added[3], 0.5f);
  // No threshold holds content back: one calibrated on these would not fire element 7.
  EXPECT_NEAR(added[7], 1e-3f, 1e-3f / 128) << "bfloat16";
  EXPECT_FALSE(relay.owes(0)) << "what fired leaves only its rounding, not owed";
  for (float r : relay.residual(0)) EXPECT_LE(std::abs(r), 1e-3f / 128);
  EXPECT_LE(relay.conservation_error(), 1e-6);
}

TEST(AggregatingRelay, AnInnerLinkSendsEverythingItOwesHoweverSmall) {
  // A rank with two links that does not train (the master, or a relay between subtrees): what
  // one link brought goes to the other whole, the small with the large.
  AggregatingRelay relay(encoding(), kParameters, 2, kNoWait, false);
  std::vector<float> content(kParameters, 0.0f);
  content[3] = 1.0f;
  content[7] = 1e-3f;
  relay.owe_everywhere(content, 0.0);
  for (std::size_t link = 0; link < 2; ++link) {
    const auto added = fired(relay, link, 1);
    EXPECT_FLOAT_EQ(added[3], 1.0f) << link;
    EXPECT_NEAR(added[7], 1e-3f, 1e-3f / 128) << link;
    EXPECT_FALSE(relay.owes(link)) << link;
  }
  EXPECT_LE(relay.conservation_error(), 1e-6);
}

TEST(AggregatingRelay, WhatTheTransportCannotCarryGoesWithTheNextMessage) {
  auto relay = leaf_owing(encoding());
  const std::size_t two = codec::kHeaderBytes + codec::values_payload_bound(2, kParameters);
  relay.limit_message_bytes(two);
  EXPECT_LE(relay.max_message_bytes(0), two);
  const auto first = fired(relay, 0, 1);
  EXPECT_FLOAT_EQ(first[1], 1.5f);  // the largest two
  EXPECT_FLOAT_EQ(first[2], -1.0f);
  EXPECT_EQ(first[3], 0.0f);
  EXPECT_TRUE(relay.owes(0)) << "elements 3 and 7 held back: still owed";
  const auto second = fired(relay, 0, 2);
  EXPECT_FLOAT_EQ(second[3], 0.5f);
  EXPECT_NEAR(second[7], 1e-3f, 1e-3f / 128);
  EXPECT_FALSE(relay.owes(0));
  EXPECT_LE(relay.conservation_error(), 1e-6);
}

TEST(AggregatingRelay, OnlyALinkThatCarriesMoreWorkersThanTheBandIsCapped) {
  // 6 workers, fan-out 2: 1 over 3 and 4, 2 over 5 and 6.
  const auto tree = topology::build_mesh(7, 2, 5);
  const auto sizes = subtree_sizes(tree);
  EXPECT_EQ(workers_behind(tree, sizes, 1, 0), 3);  // 1, 3, 4
  EXPECT_EQ(workers_behind(tree, sizes, 1, 3), 5);  // all but 3
  EXPECT_EQ(workers_behind(tree, sizes, 0, 1), 3);  // 2, 5, 6
  EXPECT_EQ(aggregated_band(tree, sizes, 1, 3, 4), 4);
  EXPECT_EQ(aggregated_band(tree, sizes, 1, 3, 5), 0) << "5 workers fit a band of 5";
  EXPECT_EQ(aggregated_band(tree, sizes, 1, 0, 2), 2);
  EXPECT_EQ(aggregated_band(tree, sizes, 3, 1, 2), 0);
  EXPECT_EQ(aggregated_band(tree, sizes, 1, 3, 0), 0) << "topology.aggregate_band 0: no cap";
  auto e = encoding();
  EXPECT_EQ(aggregate_cap(e, kParameters, 0, 0.0), kParameters) << "no band, no cap";
}

TEST(AggregatingRelay, ALinksCapIsItsBandOfWorkersCapsAndFollowsTheWarmUp) {
  // Workers' caps: 1/64 of 256 parameters, 4 entries, twice that at the warm-up's start.
  auto e = encoding();
  e.max_message_sparsity = 1.0 / 64;
  e.warmup_density = 2;
  e.warmup_epochs = 1;
  EXPECT_EQ(aggregate_cap(e, kParameters, 1, 1.0), 4u);
  EXPECT_EQ(aggregate_cap(e, kParameters, 3, 0.0), 24u);
  // Link 0 carries 2 workers' caps, link 1 5; 60 elements owed, element i by i + 1.
  AggregatingRelay relay(e, kParameters, 2, kNoWait, false, {2, 5});
  std::vector<float> content(kParameters, 0.0f);
  for (std::size_t i = 0; i < 60; ++i) content[i] = static_cast<float>(i + 1);
  relay.owe_everywhere(content, 0.0);
  const auto count = [](const std::vector<float>& added, std::size_t from, std::size_t to) {
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) n += added[i] != 0.0f ? 1 : 0;
    return n;
  };
  // At the warm-up's start: 16 and 40, the largest first.
  auto added = fired(relay, 0, 1);
  EXPECT_EQ(count(added, 44, 60), 16u);
  EXPECT_EQ(count(added, 0, 44), 0u);
  added = fired(relay, 1, 1);
  EXPECT_EQ(count(added, 20, 60), 40u);
  EXPECT_EQ(count(added, 0, 20), 0u);
  // Past it: 8 and 20; what the caps held back goes next, and nothing is lost.
  relay.set_training_progress(1.0);
  added = fired(relay, 0, 2);
  EXPECT_EQ(count(added, 36, 44), 8u);
  EXPECT_EQ(count(added, 0, 36) + count(added, 44, 60), 0u);
  EXPECT_TRUE(relay.owes(0));
  added = fired(relay, 1, 2);
  EXPECT_EQ(count(added, 0, 20), 20u);
  EXPECT_FALSE(relay.owes(1));
  EXPECT_LE(relay.conservation_error(), 1e-6);
}

// An empty exact message closing a flush round on its link, from `origin`.
std::vector<std::uint8_t> final_message(std::uint32_t origin, std::uint64_t seq) {
  std::vector<std::uint8_t> out;
  codec::encode_exact(std::vector<float>(kParameters, 0.0f), {}, {origin, seq, 0, 0, kFlagFinal},
                      out);
  return out;
}

TEST(AggregatingRelayFlush, ALinksFinalWaitsForEveryOtherLinksFinal) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, true);
  relay.contribute(relay.own_source(), parsed(message(0, 1, {1, 2, 3})), 0.0);
  EXPECT_FALSE(relay.final_due(0)) << "the round is not begun here";
  EXPECT_EQ(relay.begin_round(), 1u);
  EXPECT_FALSE(relay.final_due(0));
  relay.contribute(1, parsed(final_message(1, 1)), 0.0);
  EXPECT_FALSE(relay.final_due(0)) << "link 2's final is missing";
  EXPECT_FALSE(relay.final_due(2)) << "link 0's final is missing";
  relay.contribute(2, parsed(final_message(2, 1)), 0.0);
  EXPECT_TRUE(relay.final_due(0));
  EXPECT_FALSE(relay.final_due(1)) << "link 0's final is missing";
  std::uint64_t seq = 0;
  std::vector<std::vector<std::uint8_t>> out;
  relay.encode_final(0, 9, seq, 1 << 20, out);
  EXPECT_FALSE(relay.final_due(0)) << "sent already";
  EXPECT_FALSE(relay.round_complete(1)) << "link 0's final has not arrived";
  relay.contribute(0, parsed(final_message(0, 1)), 0.0);
  EXPECT_TRUE(relay.final_due(1));
  EXPECT_TRUE(relay.final_due(2));
  relay.encode_final(1, 9, seq, 1 << 20, out);
  EXPECT_FALSE(relay.round_complete(1)) << "link 2's final is not sent";
  relay.encode_final(2, 9, seq, 1 << 20, out);
  EXPECT_TRUE(relay.round_complete(1));
  EXPECT_EQ(relay.begin_round(), 2u);
}

TEST(AggregatingRelayCut, AMarkerWaitsForEveryChildsAndTheirLinksWaitForThisRanksPart) {
  AggregatingRelay relay(encoding(), kParameters, 3, kNoWait, true);
  relay.set_parent(0);
  std::vector<std::uint8_t> marker;
  auto child_marker = [](std::uint32_t origin) {
    std::vector<std::uint8_t> out;
    codec::encode_exact(std::vector<float>(kParameters, 0.0f), {}, {origin, 1, 0, 0, kFlagMarker},
                        out);
    return out;
  };
  EXPECT_FALSE(relay.marker_due()) << "not begun";
  EXPECT_EQ(relay.begin_cut(), 1u);
  relay.contribute(1, parsed(child_marker(5)), 0.0);
  EXPECT_FALSE(relay.marker_due()) << "link 2's marker is missing";
  EXPECT_FALSE(relay.owes(0)) << "a marker owes nothing";
  relay.contribute(2, parsed(child_marker(6)), 0.0);
  ASSERT_TRUE(relay.marker_due());
  relay.encode_marker(9, 1, marker);
  const auto sent = parsed(marker);
  EXPECT_NE(sent.header.flags & kFlagMarker, 0u);
  EXPECT_EQ(sent.header.entry_count, 0u);
  EXPECT_TRUE(relay.cut_complete(1));
  EXPECT_TRUE(relay.deferring(1)) << "link 1's marker is in, this rank's part not taken";
  EXPECT_TRUE(relay.deferring(2));
  EXPECT_FALSE(relay.deferring(0)) << "the parent sends no marker";
  relay.release_cut();
  EXPECT_FALSE(relay.deferring(1));
  EXPECT_FALSE(relay.deferring(2));
  EXPECT_EQ(relay.begin_cut(), 2u);

  AggregatingRelay master(encoding(), kParameters, 2, kNoWait, false);
  EXPECT_EQ(master.begin_cut(), 1u);
  master.contribute(0, parsed(child_marker(1)), 0.0);
  EXPECT_FALSE(master.cut_complete(1));
  master.contribute(1, parsed(child_marker(2)), 0.0);
  EXPECT_TRUE(master.cut_complete(1));
  EXPECT_FALSE(master.marker_due()) << "the master has no parent";
}

TEST(AggregatingRelayFlush, AFinalCarriesTheResidualExactlyInPieces) {
  AggregatingRelay relay(encoding(), kParameters, 2, kNoWait, true);
  std::vector<std::size_t> elements;
  for (std::size_t i = 0; i < 40; ++i) elements.push_back(3 * i);
  relay.contribute(1, parsed(message(4, 1, elements)), 0.0);
  relay.contribute(relay.own_source(), parsed(message(0, 1, {0, 1, 2})), 0.0);
  std::vector<float> owed(relay.residual(0).begin(), relay.residual(0).end());
  std::size_t nonzero = 0;
  for (const float v : owed) nonzero += v != 0.0f;
  relay.begin_round();
  relay.contribute(1, parsed(final_message(4, 2)), 0.0);
  std::uint64_t seq = 5;
  std::vector<std::vector<std::uint8_t>> pieces;
  const std::size_t limit = codec::kHeaderBytes + 10 * codec::kExactEntryBytes;
  relay.encode_final(0, 9, seq, limit, pieces);
  ASSERT_EQ(pieces.size(), (nonzero + 9) / 10);
  EXPECT_EQ(seq, 5 + pieces.size());
  std::vector<float> carried(kParameters, 0.0f);
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    const auto piece = parsed(pieces[p]);
    EXPECT_LE(pieces[p].size(), limit);
    EXPECT_EQ(piece.header.encoding, codec::Encoding::kExact);
    EXPECT_EQ((piece.header.flags & kFlagFinal) != 0, p + 1 == pieces.size()) << "piece " << p;
    std::string error;
    ASSERT_TRUE(codec::accumulate_parsed(piece, carried, &error)) << error;
  }
  EXPECT_EQ(carried, owed);
  for (const float r : relay.residual(0)) EXPECT_EQ(r, 0.0f);
  EXPECT_FALSE(relay.owes(0));
  EXPECT_LE(relay.conservation_error(), 1e-6);
}

// 1 master and 6 workers in a mesh of fan-out 2 over in-process rings, every worker publishing
// one message per step.
struct Mesh {
  static constexpr int kRanks = 7;
  // keep: fault_tolerance.keep_bytes (nullopt: no fault tolerance).
  explicit Mesh(std::optional<std::size_t> keep = std::nullopt)
      : tree(topology::build_mesh(kRanks, 2, 5)), fabric(kRanks, tree, 1 << 20) {
    for (int r = 0; r < kRanks; ++r) {
      exchanges.push_back(std::make_unique<UpdateExchange>(fabric.plane(r), r, kRanks,
                                                           kParameters, keep));
      exchanges.back()->aggregate(encoding(), kNoWait, 8, r > 0, tree);
      encoders.push_back(std::make_unique<codec::Encoder>(encoding(), kParameters));
      parameters.emplace_back(kParameters, 0.0f);
    }
  }
  void publish(int r, std::uint64_t step, core::Rng& rng) {
    std::vector<float> update(kParameters);
    for (auto& u : update) u = rng.normal() * 0.01f;
    std::vector<std::uint8_t> out;
    encoders[static_cast<std::size_t>(r)]->encode(
        update, {static_cast<std::uint32_t>(r), step, step, 0, 0}, out);
    std::string error;
    EXPECT_TRUE(codec::accumulate_message(out, published, &error)) << error;
    exchanges[static_cast<std::size_t>(r)]->publish(out, parameters[static_cast<std::size_t>(r)]);
  }
  // Every rank polls and sends what is due (flush: all it owes) until nothing moves (a flush
  // adapts tau too, so it stops after 64 rounds: the rest stays in the relay residuals).
  void settle(bool flush) {
    int rounds = 0;
    for (bool moved = true; moved && rounds < 64; ++rounds) {
      moved = false;
      for (int r = 0; r < kRanks; ++r) {
        auto& exchange = *exchanges[static_cast<std::size_t>(r)];
        moved = exchange.poll(parameters[static_cast<std::size_t>(r)]) > 0 || moved;
        moved = exchange.send_aggregates(0.0, flush) > 0 || moved;
      }
    }
    for (bool received = true; received;) {  // deliver what the last round sent
      received = false;
      for (int r = 0; r < kRanks; ++r)
        received = exchanges[static_cast<std::size_t>(r)]->poll(parameters[static_cast<std::size_t>(r)]) > 0 ||
                   received;
    }
  }
  // Every rank begins flush round `round` and they poll and send until it is complete everywhere.
  void flush(std::uint64_t round) {
    for (auto& exchange : exchanges) EXPECT_EQ(exchange->begin_flush(), round);
    for (int pass = 0; pass < 100; ++pass) {
      bool complete = true;
      for (int r = 0; r < kRanks; ++r) {
        auto& exchange = *exchanges[static_cast<std::size_t>(r)];
        exchange.poll(parameters[static_cast<std::size_t>(r)]);
        exchange.send_aggregates(0.0, false);
        complete = complete && exchange.flush_complete(round);
      }
      if (complete) return;
    }
    ADD_FAILURE() << "flush round " << round << " did not complete";
  }
  topology::Tree tree;
  comm::InProcessFabric fabric;
  std::vector<std::unique_ptr<UpdateExchange>> exchanges;
  std::vector<std::unique_ptr<codec::Encoder>> encoders;
  std::vector<std::vector<float>> parameters;
  std::vector<float> published = std::vector<float>(kParameters, 0.0f);  // what publish() sent
};

TEST(AggregatingExchange, OneMessagePerLinkPerStepAndReplicasEqualToTheRelayResiduals) {
  Mesh mesh;
  core::Rng rng(3);
  constexpr int kSteps = 30;
  for (int step = 1; step <= kSteps; ++step) {
    for (int r = 1; r < Mesh::kRanks; ++r) mesh.publish(r, static_cast<std::uint64_t>(step), rng);
    mesh.settle(false);
  }
  // A leaf's parent sends it a message only once its own training has spoken since the last:
  // at most one per step, where relaying would bring the other 5 workers' messages.
  // And every step reaches it (each step, every rank hears from every other source).
  for (int leaf : {3, 4, 5, 6}) {
    const auto received = mesh.fabric.plane(leaf).stats().messages_received;
    EXPECT_LE(received, static_cast<std::uint64_t>(kSteps)) << "leaf " << leaf;
    EXPECT_GE(received, static_cast<std::uint64_t>(kSteps - 1)) << "leaf " << leaf;
  }
  mesh.settle(true);
  std::vector<double> bound(kParameters, 0.0);
  for (const auto& exchange : mesh.exchanges) {
    EXPECT_EQ(exchange->stats().rejected, 0u);
    EXPECT_EQ(exchange->applied_twice(), 0);
    EXPECT_LE(exchange->aggregator().conservation_error(), 1e-5);
    for (std::size_t l = 0; l < exchange->link_count(); ++l)
      for (std::size_t i = 0; i < kParameters; ++i)
        bound[i] += std::abs(exchange->aggregator().residual(l)[i]);
  }
  double largest_difference = 0;
  for (int r = 1; r < Mesh::kRanks; ++r)
    for (std::size_t i = 0; i < kParameters; ++i) {
      const double difference = std::abs(mesh.parameters[static_cast<std::size_t>(r)][i] -
                                         mesh.parameters[0][i]);
      largest_difference = std::max(largest_difference, difference);
      EXPECT_LE(difference, bound[i] + 1e-6) << "rank " << r << " element " << i;
    }
  EXPECT_GT(largest_difference, 0.0) << "the relay residuals hold something: the test needs it";
}

TEST(AggregatingExchange, AFlushRoundEmptiesTheRelayResidualsAndTheReplicasAgree) {
  Mesh mesh;
  core::Rng rng(5);
  std::uint64_t step = 0;
  for (std::uint64_t round = 1; round <= 2; ++round) {
    for (int s = 0; s < 20; ++s) {
      ++step;
      for (int r = 1; r < Mesh::kRanks; ++r) mesh.publish(r, step, rng);
      mesh.settle(false);
    }
    mesh.flush(round);
    double largest = 0;
    for (const float p : mesh.parameters[0]) largest = std::max(largest, std::abs(double{p}));
    ASSERT_GT(largest, 0.0);
    for (const auto& exchange : mesh.exchanges) {
      EXPECT_EQ(exchange->stats().rejected, 0u);
      EXPECT_EQ(exchange->applied_twice(), 0);
      EXPECT_LE(exchange->aggregator().conservation_error(), 1e-5);
      for (std::size_t l = 0; l < exchange->link_count(); ++l)
        for (const float residual : exchange->aggregator().residual(l)) EXPECT_EQ(residual, 0.0f);
    }
    // Every replica holds everything published, once: the master's parameters (from zero) are
    // minus its sum.
    for (std::size_t i = 0; i < kParameters; ++i)
      EXPECT_NEAR(-mesh.parameters[0][i], mesh.published[i], 1e-5 * largest) << "element " << i;
    // The same sum in another order: equal to float rounding (a few ulps of the largest).
    for (int r = 1; r < Mesh::kRanks; ++r)
      for (std::size_t i = 0; i < kParameters; ++i)
        EXPECT_NEAR(mesh.parameters[static_cast<std::size_t>(r)][i], mesh.parameters[0][i],
                    1e-5 * largest)
            << "round " << round << ", rank " << r << ", element " << i;
  }
}

// A checkpoint's cut over the mesh: each rank takes its part once its cut is complete (the
// master a copy of its parameters, a worker what its link toward the master still owes, as its
// state does) and trains on, everyone sending all they owe at once; the parts add up to
// everything published, nothing twice (what a child sent after its marker waits at its parent
// until the parent's part is taken).
TEST(AggregatingExchange, ACutsMasterCopyAndOwedLinksHoldEverythingPublishedWhileTrainingGoesOn) {
  Mesh mesh;
  core::Rng rng(7);
  std::vector<double> published(kParameters, 0.0);
  std::vector<std::uint64_t> steps(Mesh::kRanks, 0);
  const auto train = [&](int r) {
    std::vector<float> update(kParameters);
    for (auto& u : update) u = rng.normal() * 0.01f;
    std::vector<std::uint8_t> out;
    const std::uint64_t step = ++steps[static_cast<std::size_t>(r)];
    mesh.encoders[static_cast<std::size_t>(r)]->encode(
        update, {static_cast<std::uint32_t>(r), step, step, 0, 0}, out);
    std::vector<float> content(kParameters, 0.0f);
    std::string error;
    ASSERT_TRUE(codec::accumulate_message(out, content, &error)) << error;
    for (std::size_t i = 0; i < kParameters; ++i) published[i] += content[i];
    mesh.exchanges[static_cast<std::size_t>(r)]->publish(out, mesh.parameters[static_cast<std::size_t>(r)]);
  };
  for (int step = 1; step <= 15; ++step) {
    for (int r = 1; r < Mesh::kRanks; ++r) train(r);
    mesh.settle(false);
  }
  for (auto& exchange : mesh.exchanges) EXPECT_EQ(exchange->begin_cut(), 1u);
  const auto at_cut = published;
  std::vector<float> master_at_cut;
  std::vector<double> owed(kParameters, 0.0);
  std::vector<bool> released(Mesh::kRanks, false);
  std::size_t deferred = 0;
  for (int pass = 0; pass < 40; ++pass)
    for (int r = 0; r < Mesh::kRanks; ++r) {
      auto& exchange = *mesh.exchanges[static_cast<std::size_t>(r)];
      auto& parameters = mesh.parameters[static_cast<std::size_t>(r)];
      exchange.poll(parameters);
      exchange.send_aggregates(0.0, true);
      if (released[static_cast<std::size_t>(r)]) {
        if (r > 0) train(r);  // trains on after its part, its updates flowing up at once
        continue;
      }
      if (!exchange.cut_complete(1)) continue;
      if (r == 0) {
        master_at_cut = parameters;
      } else {
        const auto& relay = exchange.aggregator();
        for (std::size_t i = 0; i < kParameters; ++i) owed[i] += relay.residual(*relay.parent())[i];
      }
      deferred += exchange.release_cut(parameters, 0.0);
      released[static_cast<std::size_t>(r)] = true;
      if (r > 0) train(r);  // at once: right behind its marker
      exchange.send_aggregates(0.0, true);
    }
  for (int r = 0; r < Mesh::kRanks; ++r) ASSERT_TRUE(released[static_cast<std::size_t>(r)]) << r;
  EXPECT_GT(deferred, 0u) << "children sent after their markers before their parents' parts";
  for (std::size_t i = 0; i < kParameters; ++i)
    EXPECT_NEAR(-master_at_cut[i] + owed[i], at_cut[i], 1e-5) << "element " << i;
  // Training went on past the cut, and after the drain's flush round the master holds
  // everything published, once.
  mesh.flush(1);
  for (std::size_t i = 0; i < kParameters; ++i)
    EXPECT_NEAR(-mesh.parameters[0][i], published[i], 1e-5) << "element " << i;
}

// After a repair (sharing/recovery.h, RelayRestart) the master's parameters and what every
// survivor takes back as its own to send again hold every update trained, once: messages lost in
// flight on the abandoned plane included. Then, restarted from the master's parameters, the
// replicas end equal and hold it all.
// A Mesh whose workers keep their whole residual (no clipping) and that sums every update
// trained, to show what a failure loses and applies twice: nothing.
struct TrainedMesh : Mesh {
  explicit TrainedMesh(std::uint64_t seed) : Mesh(std::size_t{1} << 20), rng(seed) {
    auto kept_whole = encoding();
    kept_whole.residual = "none";
    for (auto& encoder : encoders)
      encoder = std::make_unique<codec::Encoder>(kept_whole, kParameters);
  }
  // Worker r trains a step (zero: an update of zeros, so that its residual drains).
  void train(int r, bool zero) {
    std::vector<float> update(kParameters, 0.0f);
    if (!zero)
      for (auto& u : update) u = rng.normal() * 0.01f;
    for (std::size_t i = 0; i < kParameters; ++i) trained[i] += update[i];
    std::vector<std::uint8_t> out;
    const auto w = static_cast<std::size_t>(r);
    encoders[w]->encode(update, {static_cast<std::uint32_t>(r), seq[w] + 1, seq[w] + 1, 0, 0}, out);
    if (out.empty()) return;
    ++seq[w];
    exchanges[w]->publish(out, parameters[w]);
  }
  // 12 steps, then a 13th sent and never received: the plane is abandoned for a repaired one.
  void fail_with_messages_in_flight() {
    for (int step = 1; step <= 13; ++step) {
      for (int r = 1; r < kRanks; ++r) train(r, false);
      if (step < 13) settle(false);
    }
    for (auto& exchange : exchanges) exchange->send_aggregates(0.0, true);
    repaired = std::make_unique<comm::InProcessFabric>(kRanks, tree, 1 << 20);
    for (int r = 0; r < kRanks; ++r)
      exchanges[static_cast<std::size_t>(r)]->attach(repaired->plane(r));
  }
  // Survivor r's content its parent lacks (parent_applied: the newest of r's messages it took in).
  std::vector<float> unconfirmed(int r, std::optional<std::uint64_t> parent_applied) {
    std::vector<float> mine(kParameters, 0.0f);
    const auto taken =
        exchanges[static_cast<std::size_t>(r)]->take_unconfirmed(parent_applied, mine);
    EXPECT_EQ(taken.not_kept, 0u);
    added_back += taken.added_back;
    return mine;
  }
  // What the master holds (its parameters), what each survivor owes, and the encoders'
  // residuals together hold every update trained, once.
  void expect_everything_once(std::span<const float> master,
                              const std::vector<std::vector<float>>& owed) const {
    for (std::size_t i = 0; i < kParameters; ++i) {
      double held = -master[i];
      for (int r = 1; r < kRanks; ++r)
        held += owed[static_cast<std::size_t>(r)][i] +
                encoders[static_cast<std::size_t>(r)]->residual()[i];
      EXPECT_NEAR(held, trained[i], 1e-5) << "element " << i;
    }
  }
  // Every replica starts again from `master` and a survivor owes what it sends again to every
  // link (as SharingWorker::restart_relay does); training goes on to a flush round, after which
  // the master holds every update trained but the encoders' residuals, and every replica
  // equals it.
  void restart_and_train_on(const std::vector<float>& master,
                            const std::vector<std::vector<float>>& owed) {
    for (int r = 0; r < kRanks; ++r) {
      const auto w = static_cast<std::size_t>(r);
      exchanges[w]->restart_aggregation(tree);
      parameters[w] = master;
      for (std::size_t i = 0; i < kParameters; ++i) parameters[w][i] -= owed[w][i];
      exchanges[w]->aggregator().owe_everywhere(owed[w], 0.0);
    }
    for (int step = 1; step <= 20; ++step) {
      for (int r = 1; r < kRanks; ++r) train(r, step > 5);
      settle(false);
    }
    flush(1);
    for (std::size_t i = 0; i < kParameters; ++i) {
      double unsent = 0;
      for (int r = 1; r < kRanks; ++r)
        unsent += encoders[static_cast<std::size_t>(r)]->residual()[i];
      EXPECT_NEAR(-parameters[0][i], trained[i] - unsent, 1e-5) << "element " << i;
      for (int r = 1; r < kRanks; ++r)
        EXPECT_NEAR(parameters[static_cast<std::size_t>(r)][i], parameters[0][i], 1e-5);
    }
    for (int r = 1; r < kRanks; ++r)
      EXPECT_EQ(exchanges[static_cast<std::size_t>(r)]->applied_twice(), 0);
  }
  core::Rng rng;
  std::vector<double> trained = std::vector<double>(kParameters, 0.0);
  std::vector<std::uint64_t> seq = std::vector<std::uint64_t>(kRanks, 0);
  std::unique_ptr<comm::InProcessFabric> repaired;
  std::size_t added_back = 0;  // kept messages unconfirmed() added back
};

TEST(AggregatingExchange, ARelayRestartKeepsEverythingTrainedOnceWhateverWasInFlight) {
  TrainedMesh mesh(11);
  mesh.fail_with_messages_in_flight();
  std::vector<std::vector<float>> owed(Mesh::kRanks, std::vector<float>(kParameters, 0.0f));
  for (int r = 1; r < Mesh::kRanks; ++r) {
    const int parent = mesh.tree.parent[static_cast<std::size_t>(r)];
    owed[static_cast<std::size_t>(r)] = mesh.unconfirmed(
        r, mesh.exchanges[static_cast<std::size_t>(parent)]->applied_ids().highest(r));
  }
  EXPECT_GT(mesh.added_back, 0u) << "messages were in flight: the test needs them";
  mesh.expect_everything_once(mesh.parameters[0], owed);
  mesh.restart_and_train_on(mesh.parameters[0], owed);
}

TEST(AggregatingExchange, ALostMastersChildrenHoldEverythingItHadAndTheirSubtreesOweTheRest) {
  TrainedMesh mesh(12);
  mesh.fail_with_messages_in_flight();
  // The master is lost with its relay residuals: the new one's parameters come from its
  // children (every replica started at 0), who owe nothing; deeper survivors owe their parents.
  std::vector<RelayUpward> children;
  for (int child : mesh.tree.children[0]) {
    const auto upward = mesh.exchanges[static_cast<std::size_t>(child)]->aggregator().upward();
    children.push_back({std::vector<float>(kParameters, 0.0f), {upward.begin(), upward.end()}});
  }
  const auto taken_over = parameters_from_children(children, kParameters);
  double beyond_lost = 0;  // what the children had that the lost master lacked
  for (std::size_t i = 0; i < kParameters; ++i)
    beyond_lost += std::abs(taken_over[i] - mesh.parameters[0][i]);
  EXPECT_GT(beyond_lost, 0.0) << "messages were in flight to the master: the test needs them";
  std::vector<std::vector<float>> owed(Mesh::kRanks, std::vector<float>(kParameters, 0.0f));
  for (int r = 1; r < Mesh::kRanks; ++r)
    if (const int parent = mesh.tree.parent[static_cast<std::size_t>(r)]; parent != 0)
      owed[static_cast<std::size_t>(r)] = mesh.unconfirmed(
          r, mesh.exchanges[static_cast<std::size_t>(parent)]->applied_ids().highest(r));
  mesh.expect_everything_once(taken_over, owed);
  mesh.restart_and_train_on(taken_over, owed);
}

TEST(Takeover, TheNewMastersParametersAreTheBaseLessEveryChildsUpwardSum) {
  const std::vector<RelayUpward> children = {{{1.0f, 2.0f}, {0.25f, -0.5f}},
                                             {{1.0f, 2.0f}, {0.5f, 0.25f}}};
  EXPECT_EQ(parameters_from_children(children, 2), (std::vector<float>{0.25f, 2.25f}));
  EXPECT_THROW(parameters_from_children({}, 2), core::RuntimeError) << "no child survived";
  EXPECT_THROW(
      parameters_from_children({{{1.0f, 2.0f}, {0.0f, 0.0f}}, {{1.0f, 3.0f}, {0.0f, 0.0f}}}, 2),
      core::RuntimeError)
      << "the bases differ";
  EXPECT_THROW(parameters_from_children({{{1.0f}, {0.0f}}}, 2), core::RuntimeError)
      << "a wrong size";
  // The survivors' bases are told apart by their fingerprints: one bit is enough.
  const std::vector<float> base = {1.0f, 2.0f, 3.0f};
  auto other = base;
  other[2] = std::nextafter(other[2], 4.0f);
  EXPECT_EQ(relay_base_fingerprint(base), relay_base_fingerprint(std::vector<float>(base)));
  EXPECT_NE(relay_base_fingerprint(base), relay_base_fingerprint(other));
  EXPECT_NE(relay_base_fingerprint(base), relay_base_fingerprint({}));
}

}  // namespace
}  // namespace gradshare::train
