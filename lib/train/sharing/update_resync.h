// sharing/update_resync.h: the master's half of the update resync after a repair (sharing/recovery.h):
// afterwards the master and every survivor have applied the same updates.
#pragma once

#include <cstdint>
#include <map>
#include <span>

#include "comm/control_channel.h"
#include "train/sharing/recovery.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {

struct ResyncCounts {
  std::int64_t updates = 0;  // encoded updates moved between replicas
  int whole_states = 0;      // replicas (the master included) that took another's whole state
};

// Fetches the updates some survivor applied and the master lacks (in flight on the abandoned
// data plane) from that survivor's kept messages and applies them here, then sends every
// survivor the kept messages it lacks. Where the messages are no longer kept, a whole state
// moves instead: the master adopts the survivor's (then applies its own kept messages the state
// lacked and fetches the rest again), or a survivor gets the master's. `survivors` maps worker
// rank to its reported status (replacements excluded). Throws RuntimeError only when an update
// the master had applied is kept by no replica any more (fault_tolerance.keep_bytes far below
// what was in flight): it would otherwise be lost.
ResyncCounts resync_updates(comm::ControlChannel& control, UpdateExchange& exchange,
                            std::span<float> parameters,
                            const std::map<int, ResyncStatus>& survivors);

}  // namespace gradshare::train
