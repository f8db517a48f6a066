// allreduce/roles.h: the master and worker halves of the dense all-reduce reference (messages in
// allreduce/protocol.h), each given the control channel (and the workers their group) by
// run_allreduce.
#pragma once

#include <cstdint>

#include "comm/control_channel.h"
#include "comm/worker_group.h"
#include "train/run_context.h"

namespace gradshare::train {

int run_allreduce_master(RunContext& context, comm::ControlChannel& control);
int run_allreduce_worker(RunContext& context, comm::ControlChannel& control,
                         comm::WorkerGroup& workers);

}  // namespace gradshare::train
