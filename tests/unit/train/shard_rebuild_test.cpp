// shard_rebuild_test.cpp: a lost parameter server's shard rebuilt from a snapshot and the
// pushes its workers kept (downpour/shard_rebuild.h): the workers' push logs, and the replay
// against the shard the lost server held, pushed in by workers whose pulls lag.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "config/experiment_config.h"
#include "core/errors.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/shard_rebuild.h"

namespace gradshare::train {
namespace {

PushHeader dense_header(std::uint64_t seq, std::size_t floats, std::uint64_t base) {
  return {seq, static_cast<std::uint64_t>(PushFormat::kDense), floats * sizeof(float), base};
}

TEST(PushLog, KeepsWhatNoSnapshotHoldsWithinItsBudget) {
  PushLog log(3 * 8);  // three pushes of 8 bytes
  const std::vector<std::uint8_t> payload(8, 1);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) log.record(dense_header(seq, 2, 0), payload);
  log.acknowledged(1, 0, 0);
  log.acknowledged(2, 5, 0);  // 5 others' and its own push 1 since version 0: the 7th
  EXPECT_EQ(log.pushes().size(), 3u);
  EXPECT_FALSE(log.pushes()[2].age);
  EXPECT_EQ(log.pushes()[1].age, 5u);
  EXPECT_EQ(log.pushes()[0].version, 1u);
  EXPECT_EQ(log.pushes()[1].version, 7u);
  log.held_through(1);  // a snapshot holds push 1
  EXPECT_EQ(log.pushes().front().header.seq, 2u);
  EXPECT_EQ(log.bytes(), 16u);
  EXPECT_EQ(log.dropped_through(), 0u);
  log.record(dense_header(4, 2, 0), payload);
  log.record(dense_header(5, 2, 0), payload);  // over the budget: push 2 goes
  EXPECT_EQ(log.dropped_through(), 2u);
  EXPECT_EQ(log.pushes().front().header.seq, 3u);
  EXPECT_EQ(log.bytes(), 24u);
}

// A shard served to `workers` workers whose pulls lag, and their logs, as a job runs them.
class ShardRun {
 public:
  ShardRun(int workers, const std::string& server_optimizer, std::uint32_t seed)
      : config_(make_config(server_optimizer)),
        layout_(config_, 2 * kFloats, 2 + workers),  // servers 0 and 1; shard 1 is rebuilt
        server_(layout_, 1, config_),
        shard_(kFloats, 0.5f),
        random_(seed),
        seq_(static_cast<std::size_t>(workers), 0),
        base_(static_cast<std::size_t>(workers), 0) {
    for (int w = 0; w < workers; ++w) logs_.emplace(w, PushLog(1u << 20));
  }

  // Worker `w` pushes (its pull lagging by up to 4 versions) and the server applies it.
  void push(int w, bool apply = true) {
    std::vector<float> delta(kFloats);
    for (float& value : delta) value = std::uniform_real_distribution<float>(-1, 1)(random_);
    auto& base = base_[static_cast<std::size_t>(w)];
    if (std::uniform_int_distribution<int>(0, 3)(random_) == 0) base = server_.version();
    const auto header = dense_header(++seq_[static_cast<std::size_t>(w)], kFloats, base);
    const std::span<const std::uint8_t> payload(reinterpret_cast<const std::uint8_t*>(delta.data()),
                                                header.bytes);
    logs_.at(w).record(header, payload);
    if (!apply) return;  // in flight when the server is lost
    const auto ack = server_.prepare(w, header, payload, shard_);
    server_.apply(shard_);
    logs_.at(w).acknowledged(ack_seq(ack), ack_age(ack), base);
  }
  void pushes(int count) {
    for (int i = 0; i < count; ++i)
      push(std::uniform_int_distribution<int>(0, static_cast<int>(seq_.size()) - 1)(random_));
  }

  // The master's snapshot at a checkpoint, and its word to the workers.
  ShardSnapshot snapshot() {
    auto snapshot = server_.snapshot(shard_);
    for (auto& [w, log] : logs_) log.held_through(snapshot.applied[static_cast<std::size_t>(w)]);
    return snapshot;
  }

  std::map<int, DownpourPushLog> sent_logs() const {
    std::map<int, DownpourPushLog> sent;
    for (const auto& [w, log] : logs_)
      sent[w] = {seq_[static_cast<std::size_t>(w)], log.dropped_through(),
                 {log.pushes().begin(), log.pushes().end()}};
    return sent;
  }

  // The rebuild from `snapshot`: its parameters, and its updater.
  std::vector<float> rebuild(const ShardSnapshot& snapshot, ShardUpdater& rebuilt,
                             ReplayCount* count = nullptr) const {
    std::vector<float> parameters = snapshot.parameters;
    const auto replayed = replay_pushes(rebuilt, snapshot, sent_logs(), parameters);
    if (count) *count = replayed;
    return parameters;
  }

  const config::ExperimentConfig& config() const { return config_; }
  const DownpourLayout& layout() const { return layout_; }
  ShardUpdater& server() { return server_; }
  const std::vector<float>& shard() const { return shard_; }
  PushLog& log(int w) { return logs_.at(w); }

 private:
  static constexpr std::size_t kFloats = 64;
  static config::ExperimentConfig make_config(const std::string& server_optimizer) {
    config::ExperimentConfig config;
    config.training.strategy = "downpour";
    config.downpour.servers = 2;
    config.downpour.server_optimizer = server_optimizer;  // combine sum, stale pushes scaled
    return config;
  }

  config::ExperimentConfig config_;
  DownpourLayout layout_;
  ShardUpdater server_;
  std::vector<float> shard_;
  std::mt19937 random_;
  std::vector<std::uint64_t> seq_, base_;
  std::map<int, PushLog> logs_;
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

bool identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ShardRebuild, ReplaysEveryPushOnceInTheLostServersOrderBitForBit) {
  for (std::uint32_t seed = 1; seed <= 10; ++seed) {
    ShardRun run(3, seed % 2 ? "sgd" : "adagrad", seed);
    run.pushes(40);
    const auto snapshot = run.snapshot();
    run.pushes(60);
    ShardUpdater rebuilt(run.layout(), 1, run.config());
    ReplayCount count;
    const auto parameters = run.rebuild(snapshot, rebuilt, &count);
    EXPECT_EQ(count.acknowledged, 60u);
    EXPECT_EQ(count.in_flight, 0u);
    EXPECT_EQ(rebuilt.version(), run.server().version());
    EXPECT_EQ(rebuilt.applied_seqs(), run.server().applied_seqs());
    EXPECT_TRUE(identical(parameters, run.shard())) << "seed " << seed << ": max |difference| "
                                                    << max_difference(parameters, run.shard());
    // The optimizer state and the workers' own versions too: the next pushes land alike.
    const auto a = rebuilt.snapshot(parameters), b = run.server().snapshot(run.shard());
    EXPECT_EQ(a.own, b.own);
    ASSERT_EQ(a.optimizer.optimizer_state.size(), b.optimizer.optimizer_state.size());
    for (std::size_t i = 0; i < a.optimizer.optimizer_state.size(); ++i)
      EXPECT_TRUE(identical(a.optimizer.optimizer_state[i].values,
                            b.optimizer.optimizer_state[i].values));
  }
}

TEST(ShardRebuild, APushInFlightIsAppliedOnceAfterTheAcknowledgedOnes) {
  ShardRun run(3, "sgd", 3);
  run.pushes(20);
  const auto snapshot = run.snapshot();
  run.pushes(15);
  run.push(1, /*apply=*/false);  // posted, never applied: the server died first
  ShardUpdater rebuilt(run.layout(), 1, run.config());
  ReplayCount count;
  const auto parameters = run.rebuild(snapshot, rebuilt, &count);
  EXPECT_EQ(count.acknowledged, 15u);
  EXPECT_EQ(count.in_flight, 1u);
  EXPECT_EQ(rebuilt.version(), run.server().version() + 1);
  auto applied = run.server().applied_seqs();
  ++applied[1];
  EXPECT_EQ(rebuilt.applied_seqs(), applied);  // the worker's resync finds it applied
  // The lost shard plus the push in flight, as the lost server would have applied it next.
  const auto in_flight = run.sent_logs().at(1).pushes.back();
  auto expected = run.shard();
  run.server().prepare(1, in_flight.header, in_flight.payload, expected);
  run.server().apply(expected);
  EXPECT_TRUE(identical(parameters, expected));
}

TEST(ShardRebuild, BeforeAnySnapshotTheShardStartsAsTheRunDid) {
  ShardRun run(2, "adagrad", 5);
  const auto start = run.snapshot();  // what the master keeps before the first checkpoint
  EXPECT_TRUE(start.optimizer.optimizer_state.size() > 0);
  ShardSnapshot fresh{1, 0, start.parameters, WorkerState{}, start.applied, {}};
  run.pushes(30);
  ShardUpdater rebuilt(run.layout(), 1, run.config());
  const auto parameters = run.rebuild(fresh, rebuilt);
  EXPECT_EQ(rebuilt.version(), 30u);
  EXPECT_TRUE(identical(parameters, run.shard()));
}

TEST(ShardRebuild, ALogThatLostAPushTheSnapshotLacksCannotRebuild) {
  ShardRun run(2, "sgd", 9);
  run.pushes(10);
  auto snapshot = run.snapshot();
  run.pushes(10);
  // Worker 0's log as if its budget had dropped its oldest push since the snapshot.
  auto logs = run.sent_logs();
  auto& log0 = logs.at(0);
  ASSERT_FALSE(log0.pushes.empty());
  log0.dropped_through = log0.pushes.front().header.seq;
  log0.pushes.erase(log0.pushes.begin());
  ShardUpdater rebuilt(run.layout(), 1, run.config());
  std::vector<float> parameters = snapshot.parameters;
  try {
    replay_pushes(rebuilt, snapshot, logs, parameters);
    FAIL() << "rebuilt without a push";
  } catch (const core::JobCannotGoOn& error) {
    EXPECT_NE(std::string(error.what()).find("fault_tolerance.keep_bytes"), std::string::npos)
        << error.what();
  }
  // A worker that kept none of them (its budget below one push) says so too.
  logs = run.sent_logs();
  logs.at(0).dropped_through = logs.at(0).posted;
  logs.at(0).pushes.clear();
  ShardUpdater empty(run.layout(), 1, run.config());
  parameters = snapshot.parameters;
  EXPECT_THROW(replay_pushes(empty, snapshot, logs, parameters), core::JobCannotGoOn);
  // A log that skips a seq is malformed.
  logs = run.sent_logs();
  if (logs.at(1).pushes.size() >= 3) {
    logs.at(1).pushes.erase(logs.at(1).pushes.begin() + 1);
    ShardUpdater again(run.layout(), 1, run.config());
    parameters = snapshot.parameters;
    EXPECT_THROW(replay_pushes(again, snapshot, logs, parameters), core::RuntimeError);
  }
}

}  // namespace
}  // namespace gradshare::train
