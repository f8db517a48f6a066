// group_session.cpp: run_group_strategy.
#include "train/group_session.h"

#include "core/errors.h"

namespace gradshare::train {

int run_group_strategy(RunContext& context, GroupMaster master, GroupWorker worker) {
  GS_CHECK(context.links.group_session, "no workers' group session for this job");
  const auto session = context.links.group_session(context);
  context.begin_training();
  if (session->is_spare())
    return wait_as_spare(*session, context) ? worker(context, *session, /*replacement=*/true)
                                            : core::kExitOk;
  return context.is_master() ? master(context, *session)
                             : worker(context, *session, /*replacement=*/false);
}

}  // namespace gradshare::train
