// downpour_roles_test.cpp: Downpour's master, parameter server and worker, each run alone
// against a script that plays the other ranks (scripted_session.h): control messages through
// the scripted channel, pushes, acks and pulls through the in-process transport's shard boxes,
// where the script serves shards or pushes as a worker. What the role sends for what it
// receives, what it pushes or applies, its exit code and what it writes, including the failure
// paths (a worker's final model unlike the servers', a diverged worker), and a lost server's
// replacement rebuilding its shard.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "report/json_value.h"
#include "role_fixture.h"
#include "scripted_session.h"
#include "train/downpour/network.h"
#include "train/downpour/protocol.h"
#include "train/downpour/roles.h"
#include "train/downpour/server.h"
#include "train/downpour/shard_rebuild.h"
#include "train/downpour/shard_zero_file.h"
#include "train/partition_messages.h"
#include "runtime/partition_scheduler.h"

namespace gradshare::train {
namespace {

using testing::ScriptedChannel;
using testing::ScriptedGroupSession;
using testing::SentMessage;

const std::vector<std::string> kOneEpoch = {"training.epochs=1", "checkpoint.every_epoch=false"};

class DownpourRole : public testing::RoleTest {
 protected:
  // The role's rank in a job of `servers` servers (the master the first) and `workers`
  // workers: its context, session and network (the transport made).
  void set_up(int rank, int servers, int workers, std::vector<std::string> overrides = kOneEpoch) {
    overrides.push_back("downpour.servers=" + std::to_string(servers));
    ctx_.emplace(context("downpour", rank, servers + workers - 1, overrides));
    initial_ = initial_parameters(*ctx_);
    layout_.emplace(ctx_->config, initial_.size(), ctx_->size);
    channel_.emplace(rank, ctx_->size);
    std::vector<int> live;
    for (int r = 1; r < ctx_->size; ++r) live.push_back(r);
    session_.emplace(*channel_, live);
    network_.emplace(*ctx_, *session_, *layout_);
  }
  std::span<const float> initial_shard(int shard) const {
    const auto range = layout_->shard(shard);
    return std::span<const float>(initial_).subspan(range.begin, range.size());
  }
  // An update of the shard's size: a few entries, enough to move the parameters.
  std::vector<float> delta_of(int shard) const {
    std::vector<float> delta(layout_->shard(shard).size(), 0.0f);
    for (std::size_t i = 0; i < delta.size(); i += 13) delta[i] = 0.02f;
    return delta;
  }

  // What a lost server of `shard` applied to the shard the run started from: pushes 1 and 2 of
  // the worker (index 0), acknowledged, and 3 in flight, all in the worker's log. Returns the
  // log; `lost` gets the shard with all three applied.
  DownpourPushLog lost_pushes(int shard, std::vector<float>& lost) const {
    PushLog log(1u << 30);
    const auto start = initial_shard(shard);
    lost.assign(start.begin(), start.end());
    ShardUpdater updater(*layout_, shard, ctx_->config);
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      const auto delta = delta_of(shard);
      const PushHeader header{seq, static_cast<std::uint64_t>(PushFormat::kDense),
                              delta.size() * sizeof(float), seq - 1};
      const std::span<const std::uint8_t> payload(
          reinterpret_cast<const std::uint8_t*>(delta.data()), header.bytes);
      log.record(header, payload);
      const auto ack = updater.prepare(0, header, payload, lost);
      updater.apply(lost);
      if (seq < 3) log.acknowledged(seq, ack_age(ack), header.base);
    }
    return {3, 0, {log.pushes().begin(), log.pushes().end()}};
  }

  std::optional<runtime::RunContext> ctx_;
  std::vector<float> initial_;
  std::optional<DownpourLayout> layout_;
  std::optional<ScriptedChannel> channel_;
  std::optional<ScriptedGroupSession> session_;
  std::optional<DownpourNetwork> network_;
};

// --- master (server of shard 0), one worker (rank 1) played by the script ---

// The worker: asks for partitions, pushes once per partition it is granted, then acks, pushes
// everything and reports done; at the master's final pull signal it pulls and hands in the
// model (through `final_model`, which may alter it).
struct WorkerScript {
  std::unique_ptr<ShardLink> link;
  std::vector<float> delta;
  DownpourReport report;
  bool finishing = false, pushed_all = false, done_sent = false;
  std::function<std::vector<float>(std::vector<float>)> final_model =
      [](std::vector<float> parameters) { return parameters; };

  void on_sent(const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == PartitionGrantReply::kTag) {
      if (decode<PartitionGrantReply>(sent.message.payload).assignment.grant) {
        auto push = delta;
        if (!link->push_outstanding()) link->push(push, 1, 0.0, report);
        channel.arrive(1, PartitionRequest{true, 0});
      } else {
        finishing = true;
      }
    }
    if (sent.message.tag == DownpourFinalPull::kTag) {
      link->start_pull(report);
      const auto shard = link->finish_pull(report, 5.0, [] {});
      channel.arrive(1, DownpourFinalModel{final_model({shard.begin(), shard.end()}),
                                           {link->posted()}});
    }
  }
  void tick(ScriptedChannel& channel) {
    link->advance(report);
    if (!finishing || done_sent || link->push_outstanding()) return;
    if (!pushed_all) {
      auto rest = delta;
      link->push_all(rest, report);
      pushed_all = true;
      return;
    }
    channel.arrive(1, DownpourDone{report, 0});
    done_sent = true;
  }
};

class DownpourMasterRole : public DownpourRole {
 protected:
  WorkerScript worker_;
  void script() {
    worker_.link = session_->peer_transport().link(0, 0, ctx_->config);
    worker_.delta = delta_of(0);
    channel_->set_script([this](const SentMessage& sent, ScriptedChannel& c) {
      worker_.on_sent(sent, c);
    });
    channel_->set_tick([this](ScriptedChannel& c) { worker_.tick(c); });
    channel_->arrive(1, PartitionRequest{false, 0});
  }
  int run_master() {
    auto server = network_->transport().serve(0, ctx_->config, initial_shard(0));
    return run_downpour_master(*ctx_, runtime::build_model(ctx_->config), *network_,
                               std::move(server), std::nullopt);
  }
};

TEST_F(DownpourMasterRole, ServesGrantsAndEndsWhenTheWorkerHoldsTheServersModel) {
  set_up(0, 1, 1);
  script();
  EXPECT_EQ(run_master(), 0);
  // Every partition granted (one push each at most), the last push of everything applied, the
  // final pull signalled once, and the worker shut down.
  EXPECT_GE(worker_.link->posted(), 2u);
  EXPECT_EQ(channel_->sent_of<DownpourFinalPull>().size(), 1u);
  const auto shutdowns = channel_->sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 1u);
  EXPECT_EQ(shutdowns[0].exit_code, 0);
  EXPECT_TRUE(model_written(*ctx_));
  std::vector<float> served(initial_.size());
  session_->peer_transport().read_shard(0, served, 1.0, [] {});
  EXPECT_NE(served, initial_);  // the pushes moved the shard
  EXPECT_EQ(channel_->unreceived(), 0u);
}

TEST_F(DownpourMasterRole, FailsWhenAWorkersFinalModelIsNotTheServers) {
  set_up(0, 1, 1);
  script();
  worker_.final_model = [](std::vector<float> parameters) {
    parameters[1] += 0.5f;
    return parameters;
  };
  try {
    run_master();
    FAIL() << "a final model unlike the servers' passed";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("final parameters differ"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(channel_->sent_of<Shutdown>().size(), 1u);  // the worker is ended all the same
}

TEST_F(DownpourMasterRole, EndsADivergedRunWithoutAModel) {
  set_up(0, 1, 1);
  channel_->arrive(1, Diverged{3, "loss is nan"});
  script();
  EXPECT_EQ(run_master(), core::kExitDiverged);
  // No partition handed out after the divergence; the end protocol ran all the same.
  const auto grants = channel_->sent_of<PartitionGrantReply>();
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_FALSE(grants[0].assignment.grant);
  const auto shutdowns = channel_->sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 1u);
  EXPECT_EQ(shutdowns[0].exit_code, core::kExitDiverged);
  EXPECT_FALSE(model_written(*ctx_));
}

// --- a new master (a spare that took rank 0 after the master's loss), one worker scripted ---

// The lost master's shard 0 as its file holds it (the shard the run started from), and what
// the lost master applied since: the worker's pushes 1 and 2 (acknowledged) and 3 (in flight),
// which the worker's log holds; the worker reports partition 0 of epoch 0 done.
class DownpourTakeoverRole : public DownpourMasterRole {
 protected:
  void SetUp() override {
    set_up(0, 1, 1);
    session_->set_fault_tolerant();
    session_->after_repair(RepairOutcome{{{0}, {0}, 1}, true, -1, core::Clock::now()});
    const auto start = initial_shard(0);
    write_shard_zero(shard_zero_path(ctx_->run_directory),
                     {0, 0, {start.begin(), start.end()}, WorkerState{}, {0}, {{}}});
    channel_->arrive(1, lost_pushes(0, lost_));
    channel_->arrive(1, DownpourTakeoverStatus{{runtime::PartitionGrant{0, 0}}});
    // The script's worker goes on from its third push, as a resync makes it.
    script();
    worker_.link->resync(3);
  }

  std::vector<float> lost_;  // the shard the lost master held, with the push in flight
};

TEST_F(DownpourTakeoverRole, RebuildsShardZeroAndTheScheduleThenTrainsToTheEnd) {
  // The shard rebuilt before anything else: what the worker reads first is the lost shard.
  std::vector<float> first_read;
  channel_->set_script([this, &first_read](const SentMessage& sent, ScriptedChannel& c) {
    if (sent.message.tag == DownpourResync::kTag) {
      first_read.resize(lost_.size());
      session_->peer_transport().read_shard(0, first_read, 1.0, [] {});
    }
    worker_.on_sent(sent, c);
  });
  EXPECT_EQ(run_downpour_takeover(*ctx_, *network_, std::nullopt), 0);

  const auto resync = channel_->sent_of<DownpourResync>();
  ASSERT_EQ(resync.size(), 1u);
  EXPECT_EQ(resync[0].applied, 3u);  // every push the lost master applied or had in flight, once
  EXPECT_EQ(first_read, lost_);
  const auto resumes = channel_->sent_of<DownpourResume>();
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_TRUE(resumes[0].done.empty());  // the worker was not replaced: it knows its own
  // The partition the worker reported done is never handed out again; every other one is.
  const auto per_epoch = static_cast<std::int64_t>(
      runtime::epoch_shape(ctx_->config, ctx_->data.train).partition_count());
  std::int64_t granted = 0;
  for (const auto& reply : channel_->sent_of<PartitionGrantReply>())
    if (const auto& grant = reply.assignment.grant) {
      EXPECT_FALSE(grant->epoch == 0 && grant->partition == 0);
      ++granted;
    }
  EXPECT_EQ(granted, per_epoch - 1);
  EXPECT_TRUE(model_written(*ctx_));
  EXPECT_FALSE(std::filesystem::exists(shard_zero_path(ctx_->run_directory)));  // removed at the end
  bool recorded = false;
  for (const auto& record : report::read_records(ctx_->run_directory.file("metrics.jsonl")))
    recorded = recorded || (record.string_at("kind") == "recovery" &&
                            record.string_at("lost").value_or("") == "[0]");
  EXPECT_TRUE(recorded) << "no recovery record naming the lost master";
  EXPECT_EQ(channel_->unreceived(), 0u);
}

TEST_F(DownpourTakeoverRole, EndsTheJobWithALineWhenShardZerosFileIsUnreadable) {
  std::filesystem::resize_file(shard_zero_path(ctx_->run_directory), 20);
  try {
    run_downpour_takeover(*ctx_, *network_, std::nullopt);
    FAIL() << "a truncated snapshot of shard 0 was taken";
  } catch (const core::JobCannotGoOn& error) {
    EXPECT_NE(std::string(error.what()).find("downpour-shard-0.snapshot: truncated"),
              std::string::npos)
        << error.what();
  }
}

// --- parameter server of shard 1 (rank 1), the master and one worker (rank 2) scripted ---

TEST_F(DownpourRole, ServerAppliesPushesAnswersTheMasterAndEndsAtItsShutdown) {
  set_up(1, 2, 1);
  auto link = session_->peer_transport().link(1, 0, ctx_->config);
  DownpourReport report;
  auto delta = delta_of(1);
  link->push(delta, 1, 0.0, report);
  bool asked = false;
  channel_->set_tick([&](ScriptedChannel& c) {
    link->advance(report);
    if (link->push_outstanding() || asked) return;
    asked = true;  // the push is applied: a checkpoint's state, then the end
    c.arrive(0, StateRequest{});
  });
  channel_->set_script([](const SentMessage& sent, ScriptedChannel& c) {
    if (sent.message.tag == DownpourState::kTag) c.arrive(0, PeakMemoryRequest{});
    if (sent.message.tag == DownpourServerEnd::kTag) c.arrive(0, Shutdown{0});
  });
  auto server = network_->transport().serve(1, ctx_->config, initial_shard(1));
  EXPECT_EQ(run_downpour_server(*ctx_, *network_, std::move(server)), 0);

  ASSERT_EQ(channel_->sent_of<DownpourState>().size(), 1u);
  const auto ends = channel_->sent_of<DownpourServerEnd>();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].applied, std::vector<std::uint64_t>{1});  // the worker's one push, once
  std::vector<float> served(layout_->shard(1).size());
  session_->peer_transport().read_shard(1, served, 1.0, [] {});
  EXPECT_NE(served, std::vector<float>(initial_shard(1).begin(), initial_shard(1).end()));
  EXPECT_EQ(channel_->unreceived(), 0u);
}

// A replacement for lost server 1: the master's snapshot (the shard the run started from) and
// the worker's log of two acknowledged pushes and one in flight.
class DownpourRebuildRole : public DownpourRole {
 protected:
  void SetUp() override {
    set_up(1, 2, 1);
    snapshot_ = {1, 0, {initial_shard(1).begin(), initial_shard(1).end()}, WorkerState{},
                 {0}, {{}}};
    log_ = lost_pushes(1, expected_);
  }
  int run_replacement() {
    channel_->arrive(0, DownpourShardRebuild{snapshot_});
    channel_->arrive(2, log_);
    return run_downpour_server(*ctx_, *network_, nullptr);
  }

  ShardSnapshot snapshot_;
  DownpourPushLog log_;
  std::vector<float> expected_;  // the lost shard with the push in flight applied
};

TEST_F(DownpourRebuildRole, ReplaysTheWorkersPushesOnTheSnapshotThenServesAndResyncs) {
  channel_->set_script([](const SentMessage& sent, ScriptedChannel& c) {
    if (sent.message.tag == DownpourResync::kTag) c.arrive(0, StateRequest{});
    if (sent.message.tag == DownpourState::kTag) c.arrive(0, PeakMemoryRequest{});
    if (sent.message.tag == DownpourServerEnd::kTag) c.arrive(0, Shutdown{0});
  });
  EXPECT_EQ(run_replacement(), 0);

  const auto resync = channel_->sent_of<DownpourResync>();
  ASSERT_EQ(resync.size(), 1u);
  EXPECT_EQ(resync[0].applied, 3u);  // every push the worker posted, once
  std::vector<float> served(layout_->shard(1).size());
  EXPECT_EQ(session_->peer_transport().read_shard(1, served, 1.0, [] {}), 3u);
  EXPECT_EQ(served, expected_);
  const auto states = channel_->sent_of<DownpourState>();
  ASSERT_EQ(states.size(), 1u);
  ASSERT_TRUE(states[0].shard);  // the next snapshot for the master
  EXPECT_EQ(states[0].shard->version, 3u);
  EXPECT_EQ(states[0].shard->parameters, expected_);
  EXPECT_EQ(channel_->unreceived(), 0u);
}

TEST_F(DownpourRebuildRole, TellsTheMasterWhyWhenAPushIsMissing) {
  log_.pushes.erase(log_.pushes.begin());  // dropped beyond the worker's budget
  log_.dropped_through = 1;
  EXPECT_THROW(run_replacement(), core::JobCannotGoOn);
  const auto failed = channel_->sent_of<DownpourRebuildFailed>();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].why.find("parameter server 1 cannot be rebuilt: worker rank 2"),
            std::string::npos)
      << failed[0].why;
  EXPECT_TRUE(channel_->sent_of<DownpourResync>().empty());
}

// --- worker (rank 1), the master and shard 0's server scripted ---

class DownpourWorkerRole : public DownpourRole {
 protected:
  std::unique_ptr<ShardServer> server_;
  std::optional<runtime::PartitionScheduler> scheduler_;
  std::optional<DownpourDone> done_;
  std::optional<DownpourFinalModel> final_;
  std::int32_t shutdown_code_ = 0;

  void script() {
    server_ = session_->peer_transport().serve(0, ctx_->config, initial_shard(0));
    scheduler_.emplace(ctx_->config.training.epochs,
                       static_cast<std::int64_t>(
                           runtime::epoch_shape(ctx_->config, ctx_->data.train).partition_count()));
    channel_->set_tick([this](ScriptedChannel&) { server_->poll(); });
    channel_->set_script([this](const SentMessage& sent, ScriptedChannel& c) {
      if (sent.message.tag == PartitionRequest::kTag) {
        if (decode<PartitionRequest>(sent.message.payload).finished_previous)
          scheduler_->complete(1);
        c.arrive(0, PartitionGrantReply{scheduler_->assign(1)});
      }
      if (sent.message.tag == DownpourDone::kTag) {
        done_ = decode<DownpourDone>(sent.message.payload);
        c.arrive(0, DownpourFinalPull{});
      }
      if (sent.message.tag == DownpourFinalModel::kTag) {
        final_ = decode<DownpourFinalModel>(sent.message.payload);
        c.arrive(0, Shutdown{shutdown_code_});
      }
    });
  }
  int run_worker() {
    return run_downpour_worker(*ctx_, runtime::build_model(ctx_->config), *network_, StartState{},
                               false);
  }
};

TEST_F(DownpourWorkerRole, TrainsPushesEverythingAndEndsWithTheServersModel) {
  set_up(1, 1, 1);
  script();
  EXPECT_EQ(run_worker(), 0);
  const auto partitions = runtime::epoch_shape(ctx_->config, ctx_->data.train).partition_count();
  EXPECT_EQ(channel_->sent_of<PartitionRequest>().size(), partitions + 1);
  ASSERT_TRUE(done_ && final_);
  // Every step's update reached the server: what it pulled at the end is the shard, bit for
  // bit, and the server applied every push it posted, once.
  ASSERT_EQ(final_->pushed.size(), 1u);
  EXPECT_GT(final_->pushed[0], 0u);
  EXPECT_EQ(server_->applied_seq(0), final_->pushed[0]);
  EXPECT_EQ(server_->version(), final_->pushed[0]);
  const auto shard = server_->parameters();
  EXPECT_EQ(final_->parameters, std::vector<float>(shard.begin(), shard.end()));
  EXPECT_NE(final_->parameters, initial_);
  // Its reports and DownpourDone count every step of the epoch once.
  std::int64_t steps = done_->report.steps;
  for (const auto& report : channel_->sent_of<DownpourReport>()) steps += report.steps;
  EXPECT_EQ(steps, batches(*ctx_));
}

// Pushing every step, the worker still pulls: a pull due while a push was in flight goes before
// the next push (pushed first at every step, no pull ever found the link free and the worker
// trained the whole run on its own updates).
TEST_F(DownpourWorkerRole, PullsWhileItPushesEveryStep) {
  set_up(1, 1, 1,
         {"training.epochs=1", "checkpoint.every_epoch=false", "downpour.n_push=1",
          "downpour.n_pull=1"});
  script();
  EXPECT_EQ(run_worker(), 0);
  ASSERT_TRUE(done_ && final_);
  std::int64_t steps = done_->report.steps, pulls = done_->report.pulls;
  for (const auto& report : channel_->sent_of<DownpourReport>()) {
    steps += report.steps;
    pulls += report.pulls;
  }
  ASSERT_EQ(steps, batches(*ctx_));
  // The scripted server applies a push when the worker next looks for a message, so a push,
  // its ack seen and a pull take three steps: a pull every third step at least.
  EXPECT_GE(pulls, steps / 3 - 1);
  EXPECT_EQ(server_->applied_seq(0), final_->pushed[0]);
  const auto shard = server_->parameters();
  EXPECT_EQ(final_->parameters, std::vector<float>(shard.begin(), shard.end()));
}

TEST_F(DownpourWorkerRole, ReportsDivergenceThenEndsAsTheMasterSays) {
  set_up(1, 1, 1, {"training.epochs=1", "checkpoint.every_epoch=false",
                   "optimizer.learning_rate=100"});
  shutdown_code_ = core::kExitDiverged;
  script();
  EXPECT_EQ(run_worker(), core::kExitDiverged);
  EXPECT_EQ(channel_->sent_of<Diverged>().size(), 1u);
  ASSERT_TRUE(done_ && final_);  // the end protocol runs: the servers' model, for the record
}

}  // namespace
}  // namespace gradshare::train
