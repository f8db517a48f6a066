// update_resync.h: the master's half of the update resync after a repair (sharing_recovery.h):
// afterwards the master and every survivor have applied the same updates.
#pragma once

#include <cstdint>
#include <map>
#include <span>

#include "comm/control_plane.h"
#include "train/sharing_recovery.h"
#include "train/update_exchange.h"

namespace gradshare::train {

// Fetches the updates some survivor applied and the master lacks (in flight on the abandoned
// data plane) from that survivor's kept messages and applies them here, then sends every
// survivor the kept messages it lacks. `survivors` maps worker rank to its reported status
// (replacements excluded). Returns how many updates moved. Throws RuntimeError when an update
// a replica needs is no longer kept: the replicas could not be made equal.
std::int64_t resync_updates(comm::ControlPlane& control, UpdateExchange& exchange,
                            std::span<float> parameters,
                            const std::map<int, WorkerStatus>& survivors);

}  // namespace gradshare::train
