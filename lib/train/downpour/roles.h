// downpour/roles.h: the master, server and worker halves of Downpour (protocol in
// downpour/strategy.h), each given the transport, control plane and layout run_downpour set up.
#pragma once

#include <optional>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "nn/model.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"
#include "train/run_context.h"
#include "train/worker_state.h"

namespace gradshare::train {

// `model` holds the parameters to start from (seeded, or the checkpoint's); `server` serves
// shard 0; `resume` is the checkpoint being resumed, if any.
int run_downpour_master(RunContext& context, nn::Model& model, DownpourTransport& transport,
                        comm::ControlChannel& control, const DownpourLayout& layout,
                        ShardServer& server, const std::optional<ckpt::Checkpoint>& resume);
// `start` carries the worker's saved optimizer state on a resume.
int run_downpour_worker(RunContext& context, nn::Model model, DownpourTransport& transport,
                        comm::ControlChannel& control, const DownpourLayout& layout,
                        const StartState& start);

}  // namespace gradshare::train
