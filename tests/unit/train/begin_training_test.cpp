// begin_training_test.cpp: a rank enters training only once every rank got through the
// start-up (comm::Job::all_started); a job that says one was lost throws
// comm::LostBeforeTraining and leaves the phase as it was, so the start-up repair takes it.
#include <gtest/gtest.h>

#include "comm/job.h"
#include "runtime/run_context.h"

namespace gradshare::train {
namespace {

// A job whose start-up agreement answers `answer`, counting the questions.
class AgreeingJob : public comm::Job {
 public:
  explicit AgreeingJob(bool answer) : answer_(answer) {}
  int rank() const override { return 1; }
  int size() const override { return 3; }
  bool fault_tolerant() const override { return true; }
  std::unique_ptr<comm::ControlChannel> control_channel(double) override { return nullptr; }
  void barrier() override {}
  bool all_started(bool ok) override {
    ++asked;
    return ok && answer_;
  }
  int asked = 0;

 private:
  bool answer_;
};

TEST(BeginTraining, EntersTrainingWhenEveryRankGotThere) {
  AgreeingJob job(true);
  runtime::RunContext context;
  context.job = &job;
  context.phase = "setting up gradient_sharing";
  context.begin_training();
  EXPECT_EQ(context.phase, runtime::RunContext::kTraining);
  EXPECT_EQ(job.asked, 1);
}

TEST(BeginTraining, ARankLostBeforeThrowsAndKeepsTheStartupPhase) {
  AgreeingJob job(false);
  runtime::RunContext context;
  context.job = &job;
  context.phase = "setting up allreduce";
  EXPECT_THROW(context.begin_training(), comm::LostBeforeTraining);
  EXPECT_EQ(context.phase, "setting up allreduce");
}

}  // namespace
}  // namespace gradshare::train
