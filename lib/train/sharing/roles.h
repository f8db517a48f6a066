// sharing/roles.h: the master and worker halves of gradient sharing (see gradient_sharing.h for
// the protocol), each given the session (communicator, tree, planes) by run_gradient_sharing.
#pragma once

#include <optional>

#include "runtime/run_context.h"
#include "train/sharing/session.h"
#include "train/sharing/takeover.h"

namespace gradshare::train {

int run_sharing_master(runtime::RunContext& context, SharingSession& session);
// This process became the master after the lost one (sharing/takeover.h): `handover` from the
// worker it was, nothing for a spare.
int take_over_sharing_master(runtime::RunContext& context, SharingSession& session,
                             std::optional<SharingHandover> handover);
// replacement: this process was spawned to replace a dead worker and joined the repaired job.
// A repair that makes it the master goes on as take_over_sharing_master.
int run_sharing_worker(runtime::RunContext& context, SharingSession& session, bool replacement);

}  // namespace gradshare::train
