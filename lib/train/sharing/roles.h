// sharing/roles.h: the master and worker halves of gradient sharing (see gradient_sharing.h for
// the protocol), each given the session (communicator, tree, planes) by run_gradient_sharing.
#pragma once

#include "train/run_context.h"
#include "train/sharing/session.h"

namespace gradshare::train {

int run_sharing_master(RunContext& context, SharingSession& session);
// replacement: this process was spawned to replace a dead worker and joined the repaired job.
int run_sharing_worker(RunContext& context, SharingSession& session, bool replacement);

}  // namespace gradshare::train
