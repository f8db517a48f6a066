// allreduce/roles.h: the master and worker halves of the dense all-reduce reference (messages in
// allreduce/protocol.h), each given the session (control channel, workers' group, repair) by
// run_allreduce.
#pragma once

#include "train/group_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

int run_allreduce_master(runtime::RunContext& context, GroupSession& session);
// replacement: a process that takes a failed worker's place (its state comes from the others).
int run_allreduce_worker(runtime::RunContext& context, GroupSession& session, bool replacement);

}  // namespace gradshare::train
