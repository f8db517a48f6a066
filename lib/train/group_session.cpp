// group_session.cpp: run_group_strategy.
#include "train/group_session.h"

#include "core/errors.h"
#include "train/master_takeover.h"

namespace gradshare::train {

int run_group_strategy(runtime::RunContext& context, GroupMaster master, GroupWorker worker) {
  GS_CHECK(context.links.group_session, "no workers' group session for this job");
  const auto session = context.links.group_session(context);
  context.begin_training();
  // A repair after the master's loss may make a spare or a worker the master.
  const auto take_over = [&] {
    const auto lock = become_master(context, session->last_repair());
    return master(context, *session);
  };
  if (session->is_spare()) {
    if (!wait_as_spare(*session, context)) return core::kExitOk;
    return context.is_master() ? take_over() : worker(context, *session, /*replacement=*/true);
  }
  if (context.is_master()) return master(context, *session);
  try {
    return worker(context, *session, /*replacement=*/false);
  } catch (const BecameMaster&) {
    return take_over();
  }
}

}  // namespace gradshare::train
