// averaging/roles.h: the master and worker halves of parameter averaging (the protocol is drawn
// in averaging/parameter_averaging.h), each given the control channel (and the workers their
// group) by run_parameter_averaging.
#pragma once

#include "comm/control_channel.h"
#include "comm/worker_group.h"
#include "train/run_context.h"

namespace gradshare::train {

int run_averaging_master(RunContext& context, comm::ControlChannel& control);
int run_averaging_worker(RunContext& context, comm::ControlChannel& control,
                         comm::WorkerGroup& workers);

}  // namespace gradshare::train
