// downpour_roles.h: the master, server and worker halves of Downpour (protocol in
// downpour_strategy.h), each given the window, control plane and layout run_downpour set up.
#pragma once

#include "comm/control_plane.h"
#include "comm/window.h"
#include "nn/model.h"
#include "train/downpour_protocol.h"
#include "train/downpour_server.h"
#include "train/run_context.h"

namespace gradshare::train {

// `model` holds the seeded initial parameters; `server` serves shard 0.
int run_downpour_master(RunContext& context, nn::Model& model, comm::Window& window,
                        comm::ControlPlane& control, const DownpourLayout& layout,
                        ShardServer& server);
int run_downpour_worker(RunContext& context, nn::Model& model, comm::Window& window,
                        comm::ControlPlane& control, const DownpourLayout& layout);

}  // namespace gradshare::train
