// master_base_test.cpp: MasterBase alone, through a master that adds nothing: the exit code a
// stop request and a divergence leave, the on_worker_failure policy's stop, and the end of the
// job's Shutdowns.
#include "train/master_base.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "role_fixture.h"
#include "runtime/model_file.h"
#include "scripted_session.h"

namespace gradshare::train {
namespace {

class BareMaster : public MasterBase {
 public:
  BareMaster(runtime::RunContext& context, JobSession& session)
      : MasterBase(context, session, runtime::build_model(context.config)) {}
  void on_stop_signal() override { request_stop("stopping"); }
  std::optional<int> handle(const comm::ControlMessage&) override { return std::nullopt; }
  std::string awaited() const override { return "nothing"; }

  using MasterBase::end_job;
  using MasterBase::exit_code;
  using MasterBase::note_divergence;
  using MasterBase::request_stop;
  using MasterBase::stop_if_failure_aborts;
};

using MasterBaseTest = testing::RoleTest;

TEST_F(MasterBaseTest, AStopLeavesTheRequeueCodeAndADivergenceOutranksIt) {
  auto ctx = context("gradient_sharing", 0, 2);
  testing::ScriptedChannel channel(0, 3);
  testing::ScriptedGroupSession session(channel, {1, 2});
  BareMaster master(ctx, session);
  EXPECT_EQ(master.exit_code(), core::kExitOk);
  master.on_stop_signal();
  master.request_stop("again", "rank 2 received a stop signal");  // logged once: no change
  EXPECT_EQ(master.exit_code(), core::kExitRequeue);
  master.note_divergence(1, Diverged{7, "loss is nan"});
  master.note_divergence(2, Diverged{8, "loss is inf"});
  EXPECT_EQ(master.exit_code(), core::kExitDiverged);
}

TEST_F(MasterBaseTest, OnlyTheAbortPolicyStopsTheRunAfterARepair) {
  auto replace = context("gradient_sharing", 0, 2);
  testing::ScriptedChannel channel(0, 3);
  testing::ScriptedGroupSession session(channel, {1, 2});
  BareMaster replacing(replace, session);
  EXPECT_FALSE(replacing.stop_if_failure_aborts("checkpointing"));
  EXPECT_EQ(replacing.exit_code(), core::kExitOk);

  auto abort = context("gradient_sharing", 0, 2, {"fault_tolerance.on_worker_failure=abort"});
  BareMaster aborting(abort, session);
  EXPECT_TRUE(aborting.stop_if_failure_aborts("checkpointing"));
  EXPECT_TRUE(aborting.stop_if_failure_aborts("checkpointing"));  // every repair's resume says so
  EXPECT_EQ(aborting.exit_code(), core::kExitRequeue);
}

TEST_F(MasterBaseTest, TheEndOfTheJobSendsEveryRankItNamesItsShutdown) {
  auto ctx = context("gradient_sharing", 0, 3);
  testing::ScriptedChannel channel(0, 4);
  testing::ScriptedGroupSession session(channel, {1, 2, 3});
  BareMaster master(ctx, session);
  master.end_job({1, 3}, core::kExitRequeue);
  std::vector<int> dests;
  for (const auto& sent : channel.sent())
    if (sent.message.tag == Shutdown::kTag) dests.push_back(sent.dest);
  EXPECT_EQ(dests, (std::vector<int>{1, 3}));
  for (const auto& shutdown : channel.sent_of<Shutdown>())
    EXPECT_EQ(shutdown.exit_code, core::kExitRequeue);
}

}  // namespace
}  // namespace gradshare::train
