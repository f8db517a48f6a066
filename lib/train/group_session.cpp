// group_session.cpp: make_group_session, run_group_strategy.
#include "train/group_session.h"

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

std::unique_ptr<GroupSession> make_group_session(RunContext& context) {
  GS_CHECK(context.links.group_session, "no workers' group session for this job");
  return context.links.group_session(context);
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
