// fault_injection.h: deliberate failures for testing recovery (fault_tolerance.inject, or
// GRADSHARE_INJECT="RANK:STEP:KIND[,RANK:STEP:KIND...]" for external scripts, which adds to
// the config's list). At its STEP-th training step (STEP 0: as it enters the first recovery
// from another process's failure; STEP -1: right after it hands its results to the master at
// the end of the run, train/job_session.h), or at a start-up point (STEP config, data,
// run_directory, hosts or setup: as the rank starts that phase of the job's first start-up;
// sigkill only), the process of logical rank RANK
//   sigkill: kills itself with SIGKILL (a crash: no cleanup, no message),
//   exit:    leaves at once with exit code 3 (a process that quits without finalizing MPI),
//   hang:    its training thread stops in place until something kills the process (the
//            heartbeats stop after fault_tolerance.stall_timeout_ms, ft/heartbeat.h),
//   stall:   its training thread sleeps three times fault_tolerance.timeout_ms, then goes on
//            (a long step, which must not be taken for a death).
// Replacements never inject: the fault belongs to the process that was started first. How the
// rank ends is its job's (comm::Job::end_by_fault): a process ends, a thread of a test process
// ends its thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::ft {

// Parses GRADSHARE_INJECT's syntax; UserError naming the variable and the bad entry.
std::vector<config::FaultInjection> parse_injections(const std::string& text);

// How an injected fault ends its rank: called with the fault's kind, it must not return.
using EndRank = std::function<void(const std::string& kind)>;

class FaultInjector {
 public:
  // The injections of fault_tolerance.inject (and GRADSHARE_INJECT) for logical rank `rank`;
  // a stall lasts 3 x fault_tolerance.timeout_ms; the other kinds end the rank by end_rank.
  FaultInjector(const config::FaultToleranceConfig& config, int rank, bool replacement,
                EndRank end_rank);
  // Called after every training step with the worker's step count (1, 2, ...).
  void at_step(std::int64_t step) const;
  // Called as the worker enters a recovery.
  void at_recovery();
  // Called right after the worker handed in its results (JobSession::hand_in_results).
  void at_hand_in() const;
  // Called as the rank starts the start-up phase `point` (config, data, run_directory, hosts,
  // setup).
  void at_startup(const std::string& point) const;

 private:
  void fire(const config::FaultInjection& injection, const std::string& when) const;
  std::vector<config::FaultInjection> mine_;
  double stall_seconds_;
  EndRank end_rank_;
  bool recovered_once_ = false;
};

}  // namespace gradshare::ft
