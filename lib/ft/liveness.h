// ft/liveness.h: the gradient-sharing master's watch over its workers (fault_tolerance.heartbeat_ms,
// timeout_ms). Any message from a worker is a sign of life; workers send heartbeats when they
// have nothing else to say.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/timer.h"
#include "ft/process_identity.h"

namespace gradshare::ft {

class Liveness {
 public:
  explicit Liveness(std::int64_t timeout_ms) : timeout_ms_(timeout_ms) {}

  void heard(int worker) { heard_from_[worker].restart(); }
  // Every worker counts as just heard (at the start, after a repair).
  void restart(const std::vector<int>& workers);
  // The master did not read control messages for a while (an evaluation, a checkpoint write:
  // the data plane kept relaying, heartbeats waited): that time is not the workers' silence,
  // so every worker counts as just heard; what they sent meanwhile is read next.
  void master_was_busy();

  // A worker silent for timeout_ms is declared dead and stopped with SIGKILL, so that ULFM
  // reports it and the recovery replaces it. Throws RuntimeError — the job ends instead of
  // hanging — without fault tolerance, for a process on another host, and for one stopped
  // already that MPI still does not report failed (Open MPI 5.0.7 reports SIGKILLed processes,
  // not one that exited without finalizing MPI, and no repair can exclude it).
  // fault_tolerant: a failure can be repaired; processes: host and pid by logical rank.
  void check(const std::vector<int>& workers, bool fault_tolerant,
             const std::map<int, ProcessIdentity>& processes);

 private:
  std::int64_t timeout_ms_;
  std::map<int, core::Stopwatch> heard_from_;
  std::set<int> stopped_;  // declared dead and sent SIGKILL since the last restart
};

}  // namespace gradshare::ft
