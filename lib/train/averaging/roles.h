// averaging/roles.h: the master and worker halves of parameter averaging (the protocol is drawn
// in averaging/parameter_averaging.h), each given the session (control channel, workers' group,
// repair) by run_parameter_averaging.
#pragma once

#include "train/group_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

int run_averaging_master(runtime::RunContext& context, GroupSession& session);
// replacement: a process that takes a failed worker's place (its state comes from the others).
int run_averaging_worker(runtime::RunContext& context, GroupSession& session, bool replacement);

}  // namespace gradshare::train
