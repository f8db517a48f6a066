// checkpoint_cut_test.cpp: the master's checkpoint cut (sharing/checkpoint_cut.h) holds exactly
// each asked worker's updates up to its cut, whatever order updates and replies arrive in, and
// every update of an origin nobody asked.
#include <gtest/gtest.h>

#include <vector>

#include "codec/encoder.h"
#include "comm/inproc/in_process.h"
#include "config/experiment_config.h"
#include "topology/tree.h"
#include "train/sharing/checkpoint_cut.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kParameters = 32;
constexpr int kRanks = 4;  // the master and origins 1..3

// Origin o's update seq: +tau on one parameter that names (o, seq), so sums are exact.
std::vector<std::uint8_t> update(int origin, std::uint64_t seq) {
  config::EncodingConfig encoding;
  encoding.threshold_algorithm = "fixed";
  encoding.initial_threshold = 0.5;
  codec::Encoder encoder(encoding, kParameters);
  std::vector<float> values(kParameters, 0.0f);
  values[(static_cast<std::size_t>(origin) * 8 + seq) % kParameters] = 1.0f;
  std::vector<std::uint8_t> message;
  encoder.encode(values, codec::MessageMeta{static_cast<std::uint32_t>(origin), seq, 0, 0, 0},
                 message);
  return message;
}

struct Master {
  Master() : fabric(kRanks, topology::build_plain(kRanks), 1 << 16) {
    exchange.on_applied([this](const codec::ParsedMessage& message) {
      if (cut) cut->applied(message);
    });
  }
  void receive(int origin, std::uint64_t seq) {
    ASSERT_TRUE(exchange.deliver(update(origin, seq), parameters)) << exchange.last_error();
  }
  comm::InProcessFabric fabric;
  UpdateExchange exchange{fabric.plane(0), 0, kRanks, kParameters, std::nullopt};
  std::vector<float> parameters = std::vector<float>(kParameters, 0.0f);
  std::optional<CheckpointCut> cut;
};

// The parameters holding exactly these (origin, last seq) updates.
std::vector<float> holding(const std::vector<std::pair<int, std::uint64_t>>& upto) {
  Master reference;
  for (const auto& [origin, last] : upto)
    for (std::uint64_t seq = 1; seq <= last; ++seq) reference.receive(origin, seq);
  return reference.parameters;
}

TEST(CheckpointCut, HoldsEachWorkersUpdatesUpToItsCut) {
  Master master;
  master.receive(1, 1);
  master.receive(1, 2);
  master.receive(2, 1);
  master.cut.emplace(master.parameters, std::vector<int>{1, 2});
  master.receive(1, 3);  // before worker 1's reply: held
  master.receive(2, 3);  // out of order, and beyond worker 2's cut
  EXPECT_FALSE(master.cut->complete(master.exchange));
  master.cut->set_cut(1, 3);
  master.cut->set_cut(2, 2);
  EXPECT_FALSE(master.cut->complete(master.exchange)) << "worker 2's seq 2 is not applied yet";
  master.receive(1, 4);  // after worker 1's cut: left out
  master.receive(2, 2);
  ASSERT_TRUE(master.cut->complete(master.exchange));
  const auto expected = holding({{1, 3}, {2, 2}});
  EXPECT_EQ(std::vector<float>(master.cut->parameters().begin(), master.cut->parameters().end()),
            expected);
  EXPECT_EQ(master.cut->version_vector(master.exchange),
            (std::vector<std::uint64_t>{0, 3, 2, 0}));
  EXPECT_NE(master.parameters, expected) << "the master itself went on";
}

TEST(CheckpointCut, AppliesEveryUpdateOfAnOriginNobodyAsked) {
  Master master;
  master.cut.emplace(master.parameters, std::vector<int>{1});
  master.receive(3, 1);  // a worker gone since: no reply will come
  master.receive(3, 2);
  master.cut->set_cut(1, 0);
  ASSERT_TRUE(master.cut->complete(master.exchange));
  EXPECT_EQ(std::vector<float>(master.cut->parameters().begin(), master.cut->parameters().end()),
            holding({{3, 2}}));
  EXPECT_EQ(master.cut->version_vector(master.exchange),
            (std::vector<std::uint64_t>{0, 0, 0, 2}));
}

TEST(CheckpointCut, NotCompleteBeforeEveryReply) {
  Master master;
  master.cut.emplace(master.parameters, std::vector<int>{1, 2});
  master.cut->set_cut(1, 0);
  EXPECT_FALSE(master.cut->complete(master.exchange));
  EXPECT_TRUE(master.cut->asked(2));
  EXPECT_FALSE(master.cut->asked(3));
}

}  // namespace
}  // namespace gradshare::train
