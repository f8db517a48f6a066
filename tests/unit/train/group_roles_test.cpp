// group_roles_test.cpp: each role of the synchronous strategies (the dense all-reduce and
// parameter averaging), master and worker, run alone against a scripted channel that plays the
// other ranks (scripted_session.h): what it sends for what it receives, its exit code, and what
// it writes, including the failure paths (a diverged worker, a wrong-sized model, a stop, the
// workers found unequal).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "core/errors.h"
#include "report/run_directory.h"
#include "role_fixture.h"
#include "scripted_session.h"
#include "train/allreduce/protocol.h"
#include "train/allreduce/roles.h"
#include "train/averaging/protocol.h"
#include "train/averaging/roles.h"
#include "train/group_recovery.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "train/worker_state.h"

namespace gradshare::train {
namespace {

namespace fs = std::filesystem;
using testing::ScriptedChannel;
using testing::ScriptedGroupSession;
using testing::SentMessage;

class GroupRole : public testing::RoleTest {};

// The script of a master that answers the worker's last message with Shutdown{code}.
template <ControlPayload Last>
ScriptedChannel::Script shutdown_after(std::int32_t code) {
  return [code](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == Last::kTag) channel.arrive(0, Shutdown{code});
  };
}

// --- all-reduce worker ---

TEST_F(GroupRole, AllreduceWorkerTrainsEveryEpochThenHandsIn) {
  auto ctx = context("allreduce", 1, 1);
  ScriptedChannel channel(1, 2);
  ScriptedGroupSession session(channel, {1});
  channel.arrive(0, Start{0, {}});
  channel.set_script(shutdown_after<AllreduceFinal>(0));
  EXPECT_EQ(run_allreduce_worker(ctx, session, false), 0);

  const auto epochs = channel.sent_of<EpochModel>();
  ASSERT_EQ(epochs.size(), 1u);  // after epoch 1 of 2; the final model follows the last
  EXPECT_EQ(epochs[0].epoch, 1);
  EXPECT_EQ(epochs[0].step, batches(ctx));
  EXPECT_EQ(epochs[0].minibatches, batches(ctx));
  const auto finals = channel.sent_of<AllreduceFinal>();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_FALSE(finals[0].stopped);
  EXPECT_EQ(finals[0].iteration, 2 * batches(ctx));
  EXPECT_EQ(finals[0].minibatches, batches(ctx));
  EXPECT_EQ(finals[0].parameters.size(), initial_parameters(ctx).size());
  EXPECT_NE(finals[0].parameters, initial_parameters(ctx));  // it trained
  EXPECT_EQ(channel.sent().back().message.tag, AllreduceFinal::kTag);
  EXPECT_EQ(channel.unreceived(), 0u);
}

TEST_F(GroupRole, AllreduceWorkerFinishesAtTheStepAfterTheMastersFinish) {
  auto ctx = context("allreduce", 1, 1);
  ScriptedChannel channel(1, 2);
  ScriptedGroupSession session(channel, {1});
  channel.arrive(0, Start{0, {}});
  channel.set_script([](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == EpochModel::kTag) channel.arrive(0, Finish{});
    if (sent.message.tag == AllreduceFinal::kTag) channel.arrive(0, Shutdown{0});
  });
  EXPECT_EQ(run_allreduce_worker(ctx, session, false), 0);
  const auto finals = channel.sent_of<AllreduceFinal>();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].iteration, batches(ctx) + 1);  // one step of epoch 2, then the end
  EXPECT_EQ(finals[0].minibatches, 1);
}

TEST_F(GroupRole, AllreduceWorkerReportsDivergenceAndAppliesNothing) {
  auto ctx = context("allreduce", 1, 1, {"optimizer.learning_rate=100"});
  ScriptedChannel channel(1, 2);
  ScriptedGroupSession session(channel, {1});
  channel.arrive(0, Start{0, {}});
  EXPECT_EQ(run_allreduce_worker(ctx, session, false), core::kExitDiverged);
  ASSERT_EQ(channel.sent_of<Diverged>().size(), 1u);
  EXPECT_TRUE(channel.sent_of<AllreduceFinal>().empty());
}

TEST_F(GroupRole, AllreduceWorkerWithoutItsStartNamesWhatItWaitedFor) {
  auto ctx = context("allreduce", 1, 1);
  ScriptedChannel channel(1, 2, /*timeout_seconds=*/0.2);
  ScriptedGroupSession session(channel, {1});
  try {
    run_allreduce_worker(ctx, session, false);
    FAIL() << "no error without a Start";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("initial model"), std::string::npos) << error.what();
  }
}

// --- all-reduce master ---

TEST_F(GroupRole, AllreduceMasterStartsEvaluatesAndWritesTheModel) {
  auto ctx = context("allreduce", 0, 2);
  const auto parameters = initial_parameters(ctx);
  const std::int64_t b = batches(ctx);
  ScriptedChannel channel(0, 3);
  ScriptedGroupSession session(channel, {1, 2});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag != Start::kTag || sent.dest != 2) return;
    channel.arrive(1, EpochModel{1, b, b, parameters});
    channel.arrive(1, AllreduceFinal{false, 2 * b, b, parameters, 1000});
    channel.arrive(2, PeakMemoryReport{2000});
  });
  EXPECT_EQ(run_allreduce_master(ctx, session), 0);

  const auto starts = channel.sent_of<Start>();
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].step, 0);
  EXPECT_FALSE(starts[0].state.resume);
  const auto shutdowns = channel.sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 2u);
  EXPECT_EQ(shutdowns[0].exit_code, 0);
  EXPECT_TRUE(model_written(ctx));
  EXPECT_EQ(channel.unreceived(), 0u);
}

TEST_F(GroupRole, AllreduceMasterRefusesAWrongSizedModel) {
  auto ctx = context("allreduce", 0, 1);
  ScriptedChannel channel(0, 2);
  ScriptedGroupSession session(channel, {1});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == Start::kTag) channel.arrive(1, EpochModel{1, 10, 10, {1.0f, 2.0f}});
  });
  try {
    run_allreduce_master(ctx, session);
    FAIL() << "a wrong-sized model was taken";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("worker rank 1 sent 2 parameters"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(model_written(ctx));
}

TEST_F(GroupRole, AllreduceMasterEndsADivergedRunWithoutAModel) {
  auto ctx = context("allreduce", 0, 1);
  ScriptedChannel channel(0, 2);
  ScriptedGroupSession session(channel, {1});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == Start::kTag) channel.arrive(1, Diverged{7, "loss is nan"});
  });
  EXPECT_EQ(run_allreduce_master(ctx, session), core::kExitDiverged);
  EXPECT_TRUE(channel.sent_of<Shutdown>().empty());
  EXPECT_FALSE(model_written(ctx));
}

// A master that took a lost master's place (master_takeover.h) starts nobody: it reads the run
// so far from metrics.jsonl (a line the lost master left cut short included), sends every
// worker the GroupResume of a repair without a checkpoint mark, and records the recovery.
TEST_F(GroupRole, AllreduceMasterTakingOverResumesTheWorkersFromTheRunSoFar) {
  auto ctx = context("allreduce", 0, 2, {"training.epochs=3"});
  const auto parameters = initial_parameters(ctx);
  const std::int64_t b = batches(ctx);
  {
    std::ofstream metrics(ctx.run_directory.file("metrics.jsonl"), std::ios::app);
    metrics << R"({"kind":"epoch","epoch":1,"test_accuracy":0.5,"wall_seconds":100})" << "\n"
            << R"({"kind":"epoch","epoch":2,"test_accuracy":0.6,"wall_seconds":200})" << "\n"
            << R"({"kind":"step","st)" << "\n";
  }
  ScriptedChannel channel(0, 3);
  ScriptedGroupSession session(channel, {1, 2});
  session.after_repair({{{0, 2}, {0, 2}, 1}, /*became_master=*/true, /*former_rank=*/-1,
                        core::Clock::now()});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag != GroupResume::kTag || sent.dest != 2) return;
    channel.arrive(1, AllreduceFinal{false, 3 * b, b, parameters, 1000});
    channel.arrive(2, PeakMemoryReport{2000});
  });
  EXPECT_EQ(run_allreduce_master(ctx, session), 0);

  EXPECT_TRUE(channel.sent_of<Start>().empty());
  const auto resumes = channel.sent_of<GroupResume>();
  ASSERT_EQ(resumes.size(), 2u);
  EXPECT_EQ(resumes[0].epochs_evaluated, 2);
  EXPECT_EQ(resumes[0].checkpoint_mark, -1);
  EXPECT_FALSE(resumes[0].stop);
  EXPECT_FALSE(resumes[0].finish);
  EXPECT_TRUE(model_written(ctx));
  std::ifstream metrics(ctx.run_directory.file("metrics.jsonl"));
  const std::string text((std::istreambuf_iterator<char>(metrics)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(R"({"kind":"recovery","lost":"[0,2]","replaced":"[0,2]","rounds":1,)"),
            std::string::npos)
      << text;
  // The final record's wall time goes on from the lost master's.
  EXPECT_NE(text.find(R"("kind":"final","test_accuracy":)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("wall_seconds":200.)"), std::string::npos) << text;
}

// --- parameter-averaging worker ---

TEST_F(GroupRole, AveragingWorkerAveragesEveryRoundThenHandsIn) {
  auto ctx = context("parameter_averaging", 1, 1, {"training.averaging_frequency=4"});
  ScriptedChannel channel(1, 2);
  ScriptedGroupSession session(channel, {1});
  channel.arrive(0, Start{0, {}});
  channel.set_script(shutdown_after<AveragingDone>(0));
  EXPECT_EQ(run_averaging_worker(ctx, session, false), 0);

  const std::int64_t b = batches(ctx);
  ASSERT_EQ(channel.sent_of<EpochModel>().size(), 1u);
  const auto done = channel.sent_of<AveragingDone>();
  ASSERT_EQ(done.size(), 1u);
  // A round every 4 steps and one at each epoch's end.
  EXPECT_EQ(done[0].totals.rounds, 2 * ((b + 3) / 4));
  EXPECT_EQ(done[0].minibatches, b);
  EXPECT_EQ(done[0].parameters.size(), initial_parameters(ctx).size());  // worker index 0's
  EXPECT_EQ(channel.unreceived(), 0u);
}

TEST_F(GroupRole, AveragingWorkerStopsAtItsNextRoundWithACheckpoint) {
  auto ctx = context("parameter_averaging", 1, 1, {"training.averaging_frequency=4"});
  ScriptedChannel channel(1, 2);
  ScriptedGroupSession session(channel, {1});
  channel.arrive(0, Start{0, {}});
  channel.arrive(0, StateRequest{});
  channel.set_script(shutdown_after<AveragingDone>(core::kExitRequeue));
  EXPECT_EQ(run_averaging_worker(ctx, session, false), core::kExitRequeue);
  const auto snapshots = channel.sent_of<AveragingSnapshot>();
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_TRUE(snapshots[0].stop);
  EXPECT_EQ(snapshots[0].iteration, 4);  // the first round
  EXPECT_TRUE(channel.sent_of<EpochModel>().empty());
}

// --- parameter-averaging master ---

TEST_F(GroupRole, AveragingMasterCollectsTheWorkersAndWritesTheModel) {
  auto ctx = context("parameter_averaging", 0, 2);
  const auto parameters = initial_parameters(ctx);
  const std::int64_t b = batches(ctx);
  ScriptedChannel channel(0, 3);
  ScriptedGroupSession session(channel, {1, 2});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag != Start::kTag || sent.dest != 2) return;
    channel.arrive(1, EpochModel{1, b, b, parameters});
    const AveragingTotals totals{4, 4, 0};
    channel.arrive(1, AveragingDone{{}, totals, 1000, b, parameters});
    channel.arrive(2, AveragingDone{{}, totals, 2000, b, {}});
  });
  EXPECT_EQ(run_averaging_master(ctx, session), 0);
  const auto shutdowns = channel.sent_of<Shutdown>();
  ASSERT_EQ(shutdowns.size(), 2u);
  EXPECT_EQ(shutdowns[1].exit_code, 0);
  EXPECT_TRUE(model_written(ctx));
}

TEST_F(GroupRole, AveragingMasterFailsWhenTheWorkersDiffered) {
  auto ctx = context("parameter_averaging", 0, 1, {"training.verify_averaging=true"});
  const auto parameters = initial_parameters(ctx);
  ScriptedChannel channel(0, 2);
  ScriptedGroupSession session(channel, {1});
  channel.set_script([&](const SentMessage& sent, ScriptedChannel& channel) {
    if (sent.message.tag == Start::kTag)
      channel.arrive(1, AveragingDone{{}, AveragingTotals{4, 4, 1}, 1000, 8, parameters});
  });
  try {
    run_averaging_master(ctx, session);
    FAIL() << "unequal workers went unnoticed";
  } catch (const core::RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("differed after 1 of 4 rounds"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(model_written(ctx));
}

}  // namespace
}  // namespace gradshare::train
