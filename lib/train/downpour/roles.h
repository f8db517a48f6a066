// downpour/roles.h: the master, server and worker halves of Downpour (protocol in
// downpour/strategy.h), each given the transport, control plane and layout run_downpour set up.
#pragma once

#include <memory>
#include <optional>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "nn/model.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/network.h"
#include "train/downpour/takeover.h"
#include "train/downpour/transport.h"
#include "train/group_session.h"
#include "runtime/run_context.h"
#include "train/worker_state.h"

namespace gradshare::train {

// `model` holds the parameters to start from (seeded, or the checkpoint's); `server` serves
// shard 0; `resume` is the checkpoint being resumed, if any.
int run_downpour_master(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                        std::unique_ptr<ShardServer> server,
                        const std::optional<ckpt::Checkpoint>& resume);
// A new master (downpour/takeover.h), on the network the takeover's repair made; `handover`
// from a worker that became the master, none for a spare.
int run_downpour_takeover(runtime::RunContext& context, DownpourNetwork& network,
                          const std::optional<DownpourHandover>& handover);
// `start` carries the worker's saved optimizer state on a resume. A replacement (a spare, or a
// process spawned in a repair) gets its model from the servers.
int run_downpour_worker(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                        const StartState& start, bool replacement);

// A replacement for a lost Downpour worker or parameter server, on the session its repair gave
// it.
int run_downpour_replacement(runtime::RunContext& context, GroupSession& session);

}  // namespace gradshare::train
