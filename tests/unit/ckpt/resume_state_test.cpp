// resume_state_test.cpp: what the ranks of a resumed run start from, without an MPI job: every
// worker's own optimizer state (train::start_state) and Downpour's server optimizer state cut
// into shards and put back together (train::put_server_state, train::server_shard_state,
// train::put_servers from the servers' snapshots, train::put_rank_states), also when the number of
// workers or servers changed.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <vector>

#include "ckpt/checkpoint.h"
#include "config/experiment_config.h"
#include "core/errors.h"
#include "train/downpour/checkpoint.h"
#include "runtime/model_file.h"
#include "train/worker_state.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kParameters = 11;  // not a multiple of 2 or 3: shards of unequal size

DownpourLayout layout_of(int servers, int ranks) {
  config::ExperimentConfig config;
  config.downpour.servers = servers;
  return DownpourLayout(config, kParameters, ranks);
}

ckpt::Checkpoint checkpoint_of(const std::string& strategy) {
  ckpt::Checkpoint c;
  c.strategy = strategy;
  c.parameters.assign(kParameters, 0.5f);
  c.optimizer_step = 7;
  c.optimizer_state = {{"sum_squares", std::vector<float>(kParameters)}};
  std::iota(c.optimizer_state[0].values.begin(), c.optimizer_state[0].values.end(), 100.0f);
  return c;
}

// Shard s's slice of 100, 101, ...
WorkerState shard_state(const DownpourLayout& layout, int s, std::int64_t step) {
  const ShardRange range = layout.shard(s);
  WorkerState state;
  state.optimizer_step = step;
  state.optimizer_state = {{"sum_squares", std::vector<float>(range.size())}};
  std::iota(state.optimizer_state[0].values.begin(), state.optimizer_state[0].values.end(),
            100.0f + static_cast<float>(range.begin));
  return state;
}

TEST(ServerState, ShardsMakeOneStateInTheParameterLayout) {
  const auto two = layout_of(2, 4);
  ckpt::Checkpoint c = checkpoint_of("downpour");
  c.optimizer_state.clear();
  put_server_state(c, {shard_state(two, 0, 40), shard_state(two, 1, 41)}, two);
  EXPECT_EQ(c.optimizer_step, 40);
  ASSERT_EQ(c.optimizer_state.size(), 1u);
  EXPECT_EQ(c.optimizer_state[0].name, "sum_squares");
  EXPECT_EQ(c.optimizer_state[0].values, checkpoint_of("downpour").optimizer_state[0].values);
}

// A checkpoint takes each shard's parameters and optimizer state from its snapshot, whatever
// the parameters it was made with.
TEST(ServerState, SnapshotsGiveEachShardItsParametersAndState) {
  const auto two = layout_of(2, 4);
  ckpt::Checkpoint c = checkpoint_of("downpour");
  std::vector<ShardSnapshot> snapshots;
  for (int s = 0; s < 2; ++s) {
    ShardSnapshot snapshot;
    snapshot.shard = s;
    snapshot.parameters.assign(two.shard(s).size(), static_cast<float>(s + 1));
    snapshot.optimizer = shard_state(two, s, 40);
    snapshots.push_back(snapshot);
  }
  put_servers(c, {&snapshots[0], &snapshots[1]}, two);
  for (std::size_t i = 0; i < kParameters; ++i)
    EXPECT_EQ(c.parameters[i], i < two.shard(1).begin ? 1.0f : 2.0f) << i;
  EXPECT_EQ(c.optimizer_step, 40);
  EXPECT_EQ(c.optimizer_state[0].values, checkpoint_of("downpour").optimizer_state[0].values);

  snapshots[1].parameters.pop_back();  // not its shard's size
  EXPECT_THROW(put_servers(c, {&snapshots[0], &snapshots[1]}, two), core::RuntimeError);
  snapshots[1] = snapshots[0];  // shard 0's where shard 1's belongs
  EXPECT_THROW(put_servers(c, {&snapshots[0], &snapshots[1]}, two), core::RuntimeError);
}

// What the ranks answer a state request with: the servers' shards, and each worker's optimizer;
// a worker lost in a shrink gets the stand-in's.
TEST(ServerState, RankStatesGiveALostWorkerTheStandInsOptimizer) {
  const auto two = layout_of(2, 5);
  ASSERT_EQ(two.workers(), 3);
  ckpt::Checkpoint c = checkpoint_of("downpour");
  const auto snapshot = [&](int s) {
    ShardSnapshot snapshot;
    snapshot.shard = s;
    snapshot.parameters.assign(two.shard(s).size(), static_cast<float>(s + 1));
    snapshot.optimizer = shard_state(two, s, 40);
    return snapshot;
  };
  std::map<int, DownpourState> replies;
  replies[1].shard = snapshot(1);
  replies[two.worker_rank(0)].state.optimizer_step = 5;
  replies[two.worker_rank(2)].state.optimizer_step = 9;  // worker 1 was lost
  put_rank_states(c, snapshot(0), replies, two, two.worker_rank(2));
  EXPECT_EQ(c.parameters.back(), 2.0f);
  ASSERT_EQ(c.worker_optimizers.size(), 3u);
  EXPECT_EQ(c.worker_optimizers[0].step, 5);
  EXPECT_EQ(c.worker_optimizers[1].step, 9);
  EXPECT_EQ(c.worker_optimizers[2].step, 9);

  replies[1].shard.reset();  // a server that answered without its shard
  EXPECT_THROW(put_rank_states(c, snapshot(0), replies, two, two.worker_rank(0)),
               core::RuntimeError);
}

TEST(ServerState, ThreeServersCutTheStateOfTwo) {
  const ckpt::Checkpoint c = checkpoint_of("downpour");
  const auto three = layout_of(3, 5);
  for (int s = 0; s < 3; ++s) {
    const WorkerState state = server_shard_state(c, three, s);
    EXPECT_EQ(state.optimizer_step, 7);
    ASSERT_EQ(state.optimizer_state.size(), 1u);
    EXPECT_EQ(state.optimizer_state[0].values, shard_state(three, s, 7).optimizer_state[0].values)
        << "shard " << s;
  }
}

TEST(ServerState, AnotherStrategysOptimizerIsNotTheServers) {
  const WorkerState state = server_shard_state(checkpoint_of("allreduce"), layout_of(1, 3), 0);
  EXPECT_TRUE(state.optimizer_state.empty());
}

TEST(ServerState, AShardOfTheWrongSizeIsRejected) {
  const auto two = layout_of(2, 4);
  ckpt::Checkpoint c = checkpoint_of("downpour");
  WorkerState wrong = shard_state(two, 1, 1);
  wrong.optimizer_state[0].values.pop_back();
  EXPECT_THROW(put_server_state(c, {shard_state(two, 0, 1), wrong}, two), core::RuntimeError);
}

TEST(StartState, FreshWithoutACheckpoint) {
  const StartState start = start_state(std::nullopt, 3);
  EXPECT_FALSE(start.resume);
  EXPECT_TRUE(start.parameters.empty());
}

TEST(StartState, EveryWorkerGetsItsOwnOptimizerInTurn) {
  ckpt::Checkpoint c = checkpoint_of("parameter_averaging");
  c.worker_optimizers = {{10, {{"m", std::vector<float>(kParameters, 1.0f)}}},
                         {20, {{"m", std::vector<float>(kParameters, 2.0f)}}}};
  const std::optional<ckpt::Checkpoint> resume = c;
  for (std::size_t worker : {0u, 1u, 2u, 3u}) {
    const StartState start = start_state(resume, worker);
    EXPECT_TRUE(start.resume);
    EXPECT_EQ(start.parameters, c.parameters);
    EXPECT_EQ(start.worker.optimizer_step, worker % 2 == 0 ? 10 : 20) << "worker " << worker;
    ASSERT_EQ(start.worker.optimizer_state.size(), 1u);
    EXPECT_EQ(start.worker.optimizer_state[0].values[0], worker % 2 == 0 ? 1.0f : 2.0f);
  }
}

TEST(StartState, TheSingleStateServesEveryWorker) {
  const std::optional<ckpt::Checkpoint> resume = checkpoint_of("allreduce");
  const StartState start = start_state(resume, 5);
  EXPECT_EQ(start.worker.optimizer_step, 7);
  ASSERT_EQ(start.worker.optimizer_state.size(), 1u);
  EXPECT_EQ(start.worker.optimizer_state[0].name, "sum_squares");
}

}  // namespace
}  // namespace gradshare::train
