// group_session.cpp: make_group_session and the session on the job's own channel and group.
#include "train/group_session.h"

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

namespace {

// A job that cannot repair: a failure ends the run (to be resumed from its newest checkpoint).
class JobGroupSession : public GroupSession {
 public:
  explicit JobGroupSession(RunContext& context)
      : workers_(context.job->worker_group()),
        control_(context.job->control_channel(
            static_cast<double>(context.config.transport.timeout_ms) / 1000.0)) {
    for (int w = 1; w < context.size; ++w) live_.push_back(w);
  }
  comm::ControlChannel& control() override { return *control_; }
  comm::WorkerGroup& workers() override {
    GS_CHECK(workers_ != nullptr, "the master is not in the workers' group");
    return *workers_;
  }
  std::vector<int> live_workers() const override { return live_; }
  bool fault_tolerant() const override { return false; }
  RepairOutcome repair(const std::vector<std::uint8_t>&) override {
    throw core::RuntimeError("this job cannot repair a failed process");
  }

 private:
  std::unique_ptr<comm::WorkerGroup> workers_;  // null on the master
  std::unique_ptr<comm::ControlChannel> control_;
  std::vector<int> live_;
};

}  // namespace

std::unique_ptr<GroupSession> make_group_session(RunContext& context) {
  if (context.links.group_session) return context.links.group_session(context);
  return std::make_unique<JobGroupSession>(context);
}

int run_group_strategy(RunContext& context, GroupMaster master, GroupWorker worker) {
  const auto session = make_group_session(context);
  context.phase = RunContext::kTraining;
  if (session->is_spare()) {
    core::log_info("spare: waiting to replace a worker that fails");
    if (!session->wait_for_assignment()) {
      core::log_info("spare: released, not needed");
      return core::kExitOk;
    }
    core::log_info("spare: taking the place of rank " + std::to_string(context.rank));
    return worker(context, *session, /*replacement=*/true);
  }
  return context.is_master() ? master(context, *session)
                             : worker(context, *session, /*replacement=*/false);
}

}  // namespace gradshare::train
