// sharing_roles_test.cpp: gradient sharing's master and worker, each run alone against a script
// that plays the other ranks (scripted_session.h): control messages through the scripted
// channel, updates through in-process rings to replicas the script keeps (PeerReplica). What
// the role sends for what it receives, the updates it applies, relays and publishes, its exit
// code and what it writes, including the failure paths (a replica that differs at the end, a
// diverged worker, no start).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/hdf5_file.h"
#include "codec/exact.h"
#include "core/errors.h"
#include "role_fixture.h"
#include "scripted_session.h"
#include "train/partition_messages.h"
#include "runtime/checkpointer.h"
#include "runtime/partition_scheduler.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/master.h"
#include "train/sharing/recovery.h"
#include "train/sharing/protocol.h"
#include "train/sharing/report.h"
#include "train/sharing/staleness.h"
#include "train/sharing/takeover.h"
#include "train/sharing/roles.h"
#include "train/worker_state.h"

namespace gradshare::train {
namespace {

using testing::PeerReplica;
using testing::ScriptedChannel;
using testing::ScriptedSharingSession;
using testing::SentMessage;

// One epoch, no checkpoint: the roles' start, training, drain and end.
const std::vector<std::string> kOneEpoch = {"training.epochs=1", "checkpoint.every_epoch=false"};

class SharingRole : public testing::RoleTest {
 protected:
  // An update every script worker publishes for a partition: a few entries above the threshold.
  std::vector<float> update_of(int worker, std::size_t parameters) const {
    std::vector<float> update(parameters, 0.0f);
    for (std::size_t i = static_cast<std::size_t>(worker); i < parameters; i += 97)
      update[i] = worker == 1 ? 0.05f : -0.03f;
    return update;
  }
};

// The script of the master's two workers: each asks for partitions, publishes one update per
// partition it is granted, reports done when none is left, and, once it has the drain target
// and every update up to it, hands in its replica's parameters (through `drained`, which may
// alter them).
struct TwoWorkerScript {
  std::map<int, PeerReplica> replicas;
  std::map<int, std::vector<std::uint64_t>> targets;
  std::map<int, bool> handed_in;
  std::map<int, int> granted;
  std::function<std::vector<float>(int, std::vector<float>)> drained =
      [](int, std::vector<float> parameters) { return parameters; };
  std::function<std::vector<float>(int)> update;

  void on_sent(const SentMessage& sent, ScriptedChannel& channel) {
    const int w = sent.dest;
    if (sent.message.tag == Start::kTag) channel.arrive(w, PartitionRequest{false, 0});
    if (sent.message.tag == PartitionGrantReply::kTag) {
      auto& replica = replicas.at(w);
      if (decode<PartitionGrantReply>(sent.message.payload).assignment.grant) {
        ++granted[w];
        replica.publish(update(w));
        channel.arrive(w, PartitionRequest{true, replica.seq()});
      } else {
        channel.arrive(w, SharingDone{replica.seq(), 0, 0});
      }
    }
    if (sent.message.tag == SharingDrainTarget::kTag)
      targets[w] = decode<SharingDrainTarget>(sent.message.payload).last_seq;
  }
  void tick(ScriptedChannel& channel) {
    for (auto& [w, replica] : replicas) {
      replica.poll();
      if (targets.count(w) && !handed_in[w] && replica.drained(targets[w])) {
        DrainedReport report;
        report.parameters = drained(w, replica.parameters());
        channel.arrive(w, report);
        handed_in[w] = true;
      }
    }
  }
};

// The master of two workers the script plays (TwoWorkerScript), each with its replica on its
// plane of the master's tree.
class SharingMasterRole : public SharingRole {
 protected:
  explicit SharingMasterRole(const std::vector<std::string>& overrides = kOneEpoch)
      : ctx(context("gradient_sharing", 0, 2, overrides)),
        initial(initial_parameters(ctx)),
        channel(0, 3),
        session(channel, ctx.config) {
    for (int w : {1, 2})
      script.replicas.emplace(std::piecewise_construct, std::forward_as_tuple(w),
                              std::forward_as_tuple(session.peer_plane(w), w, 3, initial,
                                                    ctx.config.encoding));
    script.update = [this](int w) { return update_of(w, initial.size()); };
    channel.set_script(
        [this](const SentMessage& sent, ScriptedChannel& c) { script.on_sent(sent, c); });
    channel.set_tick([this](ScriptedChannel& c) { script.tick(c); });
  }

  runtime::RunContext ctx;
  std::vector<float> initial;
  ScriptedChannel channel;
  ScriptedSharingSession session;
  TwoWorkerScript script;
};

TEST_F(SharingMasterRole, AppliesRelaysAndDrainsEveryWorkersUpdates) {

  EXPECT_EQ(run_sharing_master(ctx, session), 0);

  // Every partition of the epoch granted once, to one worker or the other.
  const auto partitions = runtime::epoch_shape(ctx.config, ctx.data.train).partition_count();
  EXPECT_EQ(static_cast<std::size_t>(script.granted[1] + script.granted[2]), partitions);
  // The drain target names every update each worker published; each worker had the other's
  // through the master's relay (the workers' planes link only to the master).
  const auto& one = script.replicas.at(1);
  const auto& two = script.replicas.at(2);
  for (int w : {1, 2}) {
    ASSERT_EQ(script.targets[w].size(), 3u);
    EXPECT_EQ(script.targets[w][1], one.seq());
    EXPECT_EQ(script.targets[w][2], two.seq());
  }
  EXPECT_EQ(one.exchange().version_vector()[2], two.seq());
  EXPECT_EQ(two.exchange().version_vector()[1], one.seq());
  EXPECT_EQ(one.exchange().stats().duplicates + two.exchange().stats().duplicates, 0u);
  EXPECT_LE(relative_max_difference(one.parameters(), two.parameters()), kEquivalenceTolerance);
  EXPECT_GT(relative_max_difference(one.parameters(), initial), 0.0);
  // The end: Shutdown{0} to both, after both drained; the model written.
  const auto shutdowns = channel.sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 2u);
  EXPECT_EQ(shutdowns[0].exit_code, 0);
  EXPECT_TRUE(model_written(ctx));
  EXPECT_EQ(channel.unreceived(), 0u);
}

TEST_F(SharingMasterRole, FailsWhenAReplicaEndsWithAnotherModel) {
  script.drained = [](int w, std::vector<float> parameters) {
    if (w == 2) parameters[0] += 1.0f;  // an update applied twice, say
    return parameters;
  };
  try {
    run_sharing_master(ctx, session);
    FAIL() << "a replica with another model passed the equivalence check";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("replicas diverged"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(channel.sent_of<Shutdown>().size(), 2u);  // the workers are ended all the same
}

// The master's checkpoint at the epoch's end: the script's workers answer a CheckpointRequest
// with their state, written to their parts where asked (unless `hide_parts`: a part named but
// written where the master does not see it, as on a run directory each node has its own of).
class SharingCheckpointRole : public SharingMasterRole {
 protected:
  SharingCheckpointRole() : SharingMasterRole({"training.epochs=1"}) {
    channel.set_script([this](const SentMessage& sent, ScriptedChannel& c) {
      script.on_sent(sent, c);
      if (sent.message.tag == CheckpointRequest::kTag) answer(sent.dest, c, sent);
    });
  }

  WorkerState state_of(int w) const {
    const std::size_t n = initial.size();
    return {
        7, {{"m", std::vector<float>(n, 0.1f * w)}}, 1e-3f * w, std::vector<float>(n, 0.01f * w)};
  }

  void answer(int w, ScriptedChannel& c, const SentMessage& sent) {
    const auto request = decode<CheckpointRequest>(sent.message.payload);
    requests.push_back(request);
    StateReply reply{script.replicas.at(w).seq(), state_of(w), "", 0};
    if (request.parts) {
      reply.part = runtime::worker_part_name(request.iteration, w);
      if (!hide_parts)
        ckpt::write_worker_part(ctx.run_directory.checkpoint_dir() + "/" + reply.part,
                                {{7, reply.state.optimizer_state}, reply.state.residual});
      reply.state.optimizer_state.clear();
      reply.state.residual.clear();
      reply.part_bytes = 1;
    }
    const auto bytes = encode(reply);
    c.arrive(w, StateChunk{++answered[w], reply.sent_seq, 0, 1, {bytes.begin(), bytes.end()}});
  }

  // The run's only checkpoint, read back.
  ckpt::Checkpoint written() const {
    const auto newest = runtime::newest_checkpoint(ctx.run_directory);
    EXPECT_TRUE(newest.has_value());
    return ckpt::read_checkpoint(*newest);
  }
  // Every worker's state as the checkpoint must hold it.
  void expect_states(const ckpt::Checkpoint& c) const {
    const std::size_t n = initial.size();
    ASSERT_EQ(c.residuals.size(), 2 * n);
    ASSERT_EQ(c.worker_optimizers.size(), 2u);
    for (int w : {1, 2}) {
      const auto expected = state_of(w);
      const auto at = static_cast<std::ptrdiff_t>((w - 1) * n);
      EXPECT_TRUE(
          std::equal(expected.residual.begin(), expected.residual.end(), c.residuals.begin() + at));
      EXPECT_EQ(c.worker_optimizers[static_cast<std::size_t>(w - 1)].buffers.at(0).values,
                expected.optimizer_state.at(0).values);
      EXPECT_EQ(c.thresholds.at(static_cast<std::size_t>(w - 1)), expected.tau);
    }
  }

  bool hide_parts = false;
  std::vector<CheckpointRequest> requests;
  std::map<int, std::uint64_t> answered;
};

TEST_F(SharingCheckpointRole, WorkersWriteTheirPartsAndTheCheckpointLinksThem) {
  EXPECT_EQ(run_sharing_master(ctx, session), 0);
  ASSERT_EQ(requests.size(), 2u);  // one checkpoint, both workers asked for parts
  EXPECT_TRUE(requests[0].parts && requests[1].parts);
  const auto c = written();
  expect_states(c);
  ckpt::Hdf5File file = ckpt::Hdf5File::open_read(*runtime::newest_checkpoint(ctx.run_directory));
  EXPECT_EQ(file.external_target("/workers/1"),
            runtime::worker_part_name(requests[1].iteration, 2));
  EXPECT_FALSE(file.has_object("/encoding/residuals"));
}

TEST_F(SharingCheckpointRole, APartTheMasterCannotSeeTurnsPartsOffAndTheCheckpointIsTakenWhole) {
  hide_parts = true;
  EXPECT_EQ(run_sharing_master(ctx, session), 0);
  // Asked for parts, then again for whole states, which the checkpoint holds.
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_TRUE(requests[0].parts && requests[1].parts);
  EXPECT_FALSE(requests[2].parts || requests[3].parts);
  expect_states(written());
  ckpt::Hdf5File file = ckpt::Hdf5File::open_read(*runtime::newest_checkpoint(ctx.run_directory));
  EXPECT_TRUE(file.has_object("/encoding/residuals"));
  EXPECT_FALSE(file.external_target("/workers/0").has_value());
}

// A spare that took a lost master's place (sharing/takeover.h) starts nobody: it takes the
// fullest survivor's replica, rebuilds the schedule from the epochs metrics.jsonl records and
// the partitions the workers report done or hold, and hands out only the rest; the epoch it
// completes counts every minibatch once, and the recovery names rank 0.
class SharingTakeoverRole : public SharingMasterRole {
 protected:
  SharingTakeoverRole()
      : SharingMasterRole(
            {"training.epochs=2", "checkpoint.every_epoch=false", "data.partition_batches=1"}) {}
};

TEST_F(SharingTakeoverRole, SpareGoesOnWithTheScheduleTheWorkersReport) {
  {
    std::ofstream metrics(ctx.run_directory.file("metrics.jsonl"), std::ios::app);
    metrics << R"({"kind":"epoch","epoch":1,"step":300,"test_accuracy":0.5,"wall_seconds":100})"
            << "\n"
            << R"({"kind":"step","step":400,"wall_seconds":1)" << "\n";  // cut short
  }
  session.after_repair({{{0}, {0}, 1}, /*became_master=*/true, /*former_rank=*/-1,
                        core::Clock::now()});
  const auto shape = runtime::epoch_shape(ctx.config, ctx.data.train);
  const auto partitions = static_cast<std::int64_t>(shape.partition_count());
  ASSERT_GE(partitions, 4);
  // Worker 1 holds epoch 2's partition 0 and reports epoch 1 done (the epoch recorded) and
  // partition 1 of epoch 2; worker 2 waits for a grant and reports partition 2 done.
  ResyncStatus one, two;
  one.phase = WorkerPhase::kTraining;
  one.holding = runtime::PartitionGrant{1, 0};
  one.done = {{0, 0}, {1, 1}};
  one.applied = script.replicas.at(1).exchange().applied_ids();
  two.phase = WorkerPhase::kRequesting;
  two.done = {{1, 2}};
  two.applied = script.replicas.at(2).exchange().applied_ids();
  channel.arrive(1, one);
  channel.arrive(2, two);
  std::set<std::pair<std::int64_t, std::int64_t>> granted;
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& c) {
    if (sent.message.tag == ResyncStateFetch::kTag)
      c.arrive(sent.dest, ReplicaState{initial, script.replicas.at(sent.dest).exchange().applied_ids()});
    if (sent.message.tag == ResyncDone::kTag) {
      if (sent.dest == 1) {  // finishes the partition it held
        auto& replica = script.replicas.at(1);
        replica.publish(update_of(1, initial.size()));
        c.arrive(1, PartitionRequest{true, replica.seq()});
      } else {
        c.arrive(2, PartitionRequest{false, 0});
      }
      return;
    }
    if (sent.message.tag == PartitionGrantReply::kTag)
      if (const auto grant = decode<PartitionGrantReply>(sent.message.payload).assignment.grant)
        granted.insert({grant->epoch, grant->partition});
    script.on_sent(sent, c);
  });

  EXPECT_EQ(SharingMaster(ctx, session).take_over(std::nullopt), 0);

  EXPECT_TRUE(channel.sent_of<Start>().empty());
  EXPECT_EQ(channel.sent_of<ResyncStateFetch>().size(), 1u);
  std::set<std::pair<std::int64_t, std::int64_t>> rest;
  for (std::int64_t p = 3; p < partitions; ++p) rest.insert({1, p});
  EXPECT_EQ(granted, rest);
  EXPECT_TRUE(model_written(ctx));
  std::ifstream metrics(ctx.run_directory.file("metrics.jsonl"));
  const std::string text((std::istreambuf_iterator<char>(metrics)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"({"kind":"recovery","lost":"[0]","replaced":"[0]")"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"({"kind":"epoch","epoch":2,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("minibatches":)" + std::to_string(shape.batch_count()) + ","),
            std::string::npos)
      << text;
  const std::string epoch_one = R"({"kind":"epoch","epoch":1,)";
  EXPECT_EQ(text.find(epoch_one, text.find(epoch_one) + 1), std::string::npos)
      << "epoch 1 evaluated again: " << text;
  // Its summary counts from the takeover, at the run's newest step recorded.
  EXPECT_NE(text.find(R"("since_step":300)"), std::string::npos) << text;
}

// Worker 1 became the master (no spare; the repair shrank the job to worker 2): the residual
// it brings, its last updates (sharing/takeover.h), is in the model it goes on from and reaches
// the survivor in the resync, so the replica worker 2 hands in at the end holds it too.
TEST_F(SharingTakeoverRole, AFormerWorkersResidualReachesTheModelAndEverySurvivor) {
  session.set_fault_tolerant();
  session.set_live_workers({2});
  session.after_repair({{{0, 1}, {0}, 1}, /*became_master=*/true, /*former_rank=*/1,
                        core::Clock::now()});
  // Below the script's threshold at parameters no update of worker 2's touches (update_of).
  const auto in_residual = [](std::size_t i) { return i % 97 >= 40 && i % 97 < 60; };
  std::vector<float> residual(initial.size(), 0.0f);
  for (std::size_t i = 0; i < residual.size(); ++i)
    if (in_residual(i)) residual[i] = 0.004f;
  SharingHandover handover;
  handover.replica = {initial, script.replicas.at(1).exchange().applied_ids()};
  handover.status.phase = WorkerPhase::kRequesting;
  codec::encode_exact_pieces(residual, {1, 1, 0, 0, 0}, 0,
                             codec::kHeaderBytes + 8 * codec::kExactEntryBytes, handover.residual);
  const std::size_t pieces = handover.residual.size();
  ASSERT_GT(pieces, 1u);
  ResyncStatus two;
  two.phase = WorkerPhase::kRequesting;
  two.applied = script.replicas.at(2).exchange().applied_ids();
  channel.arrive(2, two);
  std::size_t resync_updates = 0;
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& c) {
    auto& replica = script.replicas.at(2);
    if (sent.message.tag == ResyncUpdates::kTag)
      for (const auto& message : decode<ResyncUpdates>(sent.message.payload).messages) {
        ASSERT_TRUE(replica.deliver(message));
        ++resync_updates;
      }
    if (sent.message.tag == ResyncDone::kTag) {
      c.arrive(2, PartitionRequest{false, 0});
      return;
    }
    script.on_sent(sent, c);
  });
  script.replicas.erase(1);  // the script plays worker 2 alone

  EXPECT_EQ(SharingMaster(ctx, session).take_over(std::move(handover)), 0);

  EXPECT_EQ(resync_updates, pieces);
  ASSERT_TRUE(script.handed_in[2]);
  const auto& parameters = script.replicas.at(2).parameters();
  for (std::size_t i = 0; i < residual.size(); ++i)
    if (in_residual(i)) {
      EXPECT_EQ(parameters[i], initial[i] - 0.004f) << i;
    }
  EXPECT_EQ(script.replicas.at(2).exchange().applied_twice(), 0);
}

TEST_F(SharingRole, MasterEndsADivergedRunWithoutAModel) {
  auto ctx = context("gradient_sharing", 0, 2, kOneEpoch);
  ScriptedChannel channel(0, 3);
  ScriptedSharingSession session(channel, ctx.config);
  channel.set_script([](const SentMessage& sent, ScriptedChannel& c) {
    if (sent.message.tag == Start::kTag && sent.dest == 1) c.arrive(1, Diverged{4, "loss is nan"});
  });
  EXPECT_EQ(run_sharing_master(ctx, session), core::kExitDiverged);
  const auto shutdowns = channel.sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 2u);
  EXPECT_EQ(shutdowns[0].exit_code, core::kExitDiverged);
  EXPECT_EQ(shutdowns[1].exit_code, core::kExitDiverged);
  EXPECT_FALSE(model_written(ctx));
}

// The worker's master and its peer (rank 2): the master grants the epoch's partitions in
// order, relays between the worker and the peer (a replica of its own on rank 0's plane), and
// answers SharingDone with the drain target and the drained report with Shutdown.
struct MasterScript {
  runtime::PartitionScheduler scheduler;
  PeerReplica master;
  PeerReplica peer;
  std::optional<SharingDone> done;
  std::optional<DrainedReport> drained;

  void on_sent(const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == PartitionRequest::kTag) {
      if (decode<PartitionRequest>(sent.message.payload).finished_previous) scheduler.complete(1);
      channel.arrive(0, PartitionGrantReply{scheduler.assign(1)});
    }
    if (sent.message.tag == SharingDone::kTag) {
      done = decode<SharingDone>(sent.message.payload);
      channel.arrive(0, SharingDrainTarget{{0, done->last_seq, peer.seq()}});
    }
    if (sent.message.tag == DrainedReport::kTag) {
      drained = decode<DrainedReport>(sent.message.payload);
      channel.arrive(0, Shutdown{0});
    }
    if (sent.message.tag == Diverged::kTag) channel.arrive(0, Shutdown{core::kExitDiverged});
  }
  void tick() {
    master.poll();
    peer.poll();
  }
};

class SharingWorkerRole : public SharingRole {
 protected:
  std::optional<MasterScript> script_;
  void script(ScriptedChannel& channel, ScriptedSharingSession& session,
              const runtime::RunContext& ctx) {
    const auto initial = initial_parameters(ctx);
    const auto partitions = static_cast<std::int64_t>(
        runtime::epoch_shape(ctx.config, ctx.data.train).partition_count());
    script_.emplace(
        MasterScript{runtime::PartitionScheduler(1, partitions),
                     PeerReplica(session.peer_plane(0), 0, 3, initial, ctx.config.encoding),
                     PeerReplica(session.peer_plane(2), 2, 3, initial, ctx.config.encoding),
                     {},
                     {}});
    channel.set_script([this](const SentMessage& sent, ScriptedChannel& c) {
      script_->on_sent(sent, c);
    });
    channel.set_tick([this](ScriptedChannel&) { script_->tick(); });
  }
};

TEST_F(SharingWorkerRole, TrainsItsGrantsSharesEveryUpdateAndDrains) {
  auto ctx = context("gradient_sharing", 1, 2, kOneEpoch);
  ScriptedChannel channel(1, 3);
  ScriptedSharingSession session(channel, ctx.config);
  script(channel, session, ctx);
  channel.arrive(0, Start{0, {}});
  // The peer published before the worker began, then had nothing to train (flagged idle, so the
  // staleness bound does not wait for it): the worker must apply its update to drain.
  script_->peer.publish(update_of(2, initial_parameters(ctx).size()), kFlagIdle);

  EXPECT_EQ(run_sharing_worker(ctx, session, false), 0);

  // Every partition of the epoch asked for and trained (the last request finds none left).
  const auto requests = channel.sent_of<PartitionRequest>();
  const auto partitions = runtime::epoch_shape(ctx.config, ctx.data.train).partition_count();
  ASSERT_EQ(requests.size(), partitions + 1);
  EXPECT_FALSE(requests[0].finished_previous);
  EXPECT_TRUE(requests.back().finished_previous);
  // Every update it published reached the master, its SharingDone names the last, and the
  // model it handed in is the master's replica's, the peer's update included.
  ASSERT_TRUE(script_->done && script_->drained);
  EXPECT_GT(script_->done->last_seq, 0u);
  EXPECT_EQ(script_->master.exchange().version_vector()[1], script_->done->last_seq);
  EXPECT_EQ(script_->drained->published, script_->done->last_seq);
  EXPECT_EQ(script_->drained->applied_twice, 0);
  EXPECT_LE(relative_max_difference(script_->drained->parameters, script_->master.parameters()),
            kEquivalenceTolerance);
  EXPECT_EQ(script_->peer.exchange().version_vector()[1], script_->done->last_seq);
  EXPECT_FALSE(channel.sent_of<SharingReport>().empty());
  EXPECT_TRUE(channel.sent_of<Diverged>().empty());
}

// Back-pressure, which the code guarantees rather than timing: while the master's end of the
// worker's ring stays unread (the smallest ring, 4 KiB, bitmap messages of ~200 B), the ring
// fills and the worker must keep its updates in its residual instead of publishing; once the
// script reads again (after the worker has reported back-pressure) every quantum arrives: the
// master's replica ends equal to the worker's and its bookkeeping of updates, quanta sent and
// residual balances (no clipping, the one deliberate loss, so nothing may be missing).
TEST_F(SharingWorkerRole, HoldsUpdatesInItsResidualWhileItsRingIsFullAndLosesNone) {
  auto ctx = context("gradient_sharing", 1, 2,
                     {"training.epochs=2", "checkpoint.every_epoch=false", "logging.every_steps=4",
                      "transport.ring_bytes=4096", "encoding.format=bitmap",
                      "encoding.residual=none", "encoding.check_conservation=true"});
  ScriptedChannel channel(1, 3);
  ScriptedSharingSession session(channel, ctx.config);
  script(channel, session, ctx);
  bool reading = false;
  channel.set_tick([&](ScriptedChannel& c) {
    for (const auto& report : c.sent_of<SharingReport>()) reading = reading || report.backpressure > 0;
    if (reading)
      script_->tick();
    else
      script_->peer.poll();
  });
  channel.arrive(0, Start{0, {}});
  script_->peer.publish(update_of(2, initial_parameters(ctx).size()), kFlagIdle);

  EXPECT_EQ(run_sharing_worker(ctx, session, false), 0);

  std::int64_t held_back = 0;
  for (const auto& report : channel.sent_of<SharingReport>()) held_back += report.backpressure;
  EXPECT_GT(held_back, 0);
  ASSERT_TRUE(script_->done && script_->drained);
  EXPECT_GE(script_->done->conservation_error, 0.0);
  EXPECT_LE(script_->done->conservation_error, 1e-4);
  EXPECT_EQ(script_->master.exchange().version_vector()[1], script_->done->last_seq);
  EXPECT_EQ(script_->drained->applied_twice, 0);
  EXPECT_LE(relative_max_difference(script_->drained->parameters, script_->master.parameters()),
            kEquivalenceTolerance);
}

// Aggregating (topology.aggregate), a checkpoint pauses the worker for a cut: asked for its state
// before its first partition, it sends its marker and takes its state, then trains on with no
// word from the master. The master's copy at the cut (taken once the marker is in, before
// anything after it) holds nothing the worker trained; the drain's flush round (the target)
// leaves the master's replica equal to the worker's.
struct AggregatingMasterScript {
  runtime::PartitionScheduler scheduler;
  PeerReplica master;
  PeerReplica peer;
  bool asked = false;
  bool state_in = false;
  std::optional<std::vector<float>> master_at_cut;
  std::uint64_t from_worker_at_cut = 0;  // messages the master applied from rank 1's link
  std::optional<DrainedReport> drained;

  void on_sent(const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == PartitionRequest::kTag) {
      if (!asked) {
        asked = true;
        master.exchange().begin_cut();
        peer.exchange().begin_cut();
        channel.arrive(0, CheckpointRequest{0, /*parts=*/false});
      }
      if (decode<PartitionRequest>(sent.message.payload).finished_previous) scheduler.complete(1);
      channel.arrive(0, PartitionGrantReply{scheduler.assign(1)});
    }
    if (sent.message.tag == StateChunk::kTag) {
      const auto piece = decode<StateChunk>(sent.message.payload);
      channel.arrive(0, StateChunkAck{piece.checkpoint, piece.index});
      state_in = piece.index + 1 == piece.count;
    }
    if (sent.message.tag == SharingDone::kTag) {
      const auto round = master.exchange().begin_flush();
      peer.exchange().begin_flush();
      channel.arrive(0, SharingDrainTarget{{0, 0, 0}, round});
    }
    if (sent.message.tag == DrainedReport::kTag) {
      drained = decode<DrainedReport>(sent.message.payload);
      channel.arrive(0, Shutdown{0});
    }
  }
  void tick(ScriptedChannel&) {
    master.poll();
    peer.poll();
    if (!master_at_cut && master.exchange().cut_complete(1)) {
      master_at_cut = master.parameters();
      from_worker_at_cut = master.exchange().highest_applied(1);
      master.release_cut();
    }
  }
};

TEST_F(SharingWorkerRole, AggregatingPausesForACheckpointsCutUntilItsMarkerIsSent) {
  auto ctx = context("gradient_sharing", 1, 2, {"training.epochs=1", "topology.aggregate=true"});
  ScriptedChannel channel(1, 3);
  ScriptedSharingSession session(channel, ctx.config);
  const auto initial = initial_parameters(ctx);
  AggregatingMasterScript script{
      runtime::PartitionScheduler(
          1, static_cast<std::int64_t>(
                 runtime::epoch_shape(ctx.config, ctx.data.train).partition_count())),
      PeerReplica(session.peer_plane(0), 0, 3, initial, ctx.config.encoding),
      PeerReplica(session.peer_plane(2), 2, 3, initial, ctx.config.encoding),
      false,
      false,
      std::nullopt,
      0,
      std::nullopt};
  script.master.aggregate(ctx.config.encoding, session.tree());
  script.peer.aggregate(ctx.config.encoding, session.tree());
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& c) { script.on_sent(sent, c); });
  channel.set_tick([&](ScriptedChannel& c) { script.tick(c); });
  channel.arrive(0, Start{0, {}});
  // The peer has nothing to train: idle, so that nobody waits for its clock.
  script.peer.publish(std::vector<float>(initial.size(), 0.0f), kFlagIdle);

  EXPECT_EQ(run_sharing_worker(ctx, session, false), 0);

  // Paused: of the worker's link, only its marker is in the master's copy, which is the start.
  ASSERT_TRUE(script.state_in);
  ASSERT_TRUE(script.master_at_cut);
  EXPECT_EQ(script.from_worker_at_cut, 1u) << "the worker's marker alone";
  EXPECT_EQ(*script.master_at_cut, initial);
  ASSERT_TRUE(script.drained);
  EXPECT_GT(script.drained->published, 0u);
  EXPECT_EQ(script.drained->applied_twice, 0);
  EXPECT_GT(script.drained->flush_messages, 0u);
  EXPECT_LE(relative_max_difference(script.drained->parameters, script.master.parameters()),
            kEquivalenceTolerance);
  EXPECT_GT(relative_max_difference(script.drained->parameters, initial), 0.0)
      << "the worker trained after its state";
}

TEST_F(SharingWorkerRole, ReportsDivergenceAndEndsWithTheMastersCode) {
  auto ctx = context("gradient_sharing", 1, 2, {"training.epochs=1", "optimizer.learning_rate=100"});
  ScriptedChannel channel(1, 3);
  ScriptedSharingSession session(channel, ctx.config);
  script(channel, session, ctx);
  channel.arrive(0, Start{0, {}});
  EXPECT_EQ(run_sharing_worker(ctx, session, false), core::kExitDiverged);
  EXPECT_EQ(channel.sent_of<Diverged>().size(), 1u);
  EXPECT_TRUE(channel.sent_of<DrainedReport>().empty());
}

TEST_F(SharingWorkerRole, RefusesAWrongSizedModelInItsStart) {
  auto ctx = context("gradient_sharing", 1, 2, kOneEpoch);
  ScriptedChannel channel(1, 3);
  ScriptedSharingSession session(channel, ctx.config);
  script(channel, session, ctx);
  StartState start;
  start.resume = true;
  start.parameters.assign(initial_parameters(ctx).size(), 0.25f);
  start.parameters.resize(3);  // a wrong-sized model
  channel.arrive(0, Start{0, start});
  try {
    run_sharing_worker(ctx, session, false);
    FAIL() << "a wrong-sized model was taken";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("wrong-sized model"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(channel.sent_of<PartitionRequest>().empty());
}

}  // namespace
}  // namespace gradshare::train
