// sharing_roles.h: the master and worker halves of gradient sharing (see gradient_sharing.h for
// the protocol), each given its data plane and control plane by run_gradient_sharing.
#pragma once

#include "comm/control_plane.h"
#include "comm/data_plane.h"
#include "train/run_context.h"

namespace gradshare::train {

int run_sharing_master(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control);
int run_sharing_worker(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control);

}  // namespace gradshare::train
