// job_session.h: what every session that repairs the job in-job shares — gradient sharing's
// (sharing/session.h) and the synchronous strategies' (group_session.h): the control channel,
// the live workers, the repair after a process failure and the spares that wait for one; and
// the steps every strategy takes around a repair (a spare's wait, a repair repeated while more
// processes fail, the pause a survivor logs) and around the end of the run.
//
// The end: the master sends every live rank Shutdown once the run's results are written and
// joins no repair after it. A process that fails then leaves nothing to repair: the master
// ignores it while it sends and flushes (send_shutdown), and a rank that has its Shutdown
// ignores it in its last flush (flush_at_end). A rank that sees a failure before it has read
// its Shutdown must not start a repair the master would never join, and its own repair would
// revoke the channel the others read theirs from. So a rank that has handed in its results
// (JobSession::hand_in_results: the master can end the run without hearing from it again)
// leaves the failure to the master (shutdown_before_repair): the master either is still in its
// loop, where it sees the failure too and starts the repair (the revoked channel tells the
// rank to join it), or has ended the run, and the Shutdown arrives. A rank that has not handed
// in repairs at once: the master cannot have ended without its results. Only a Shutdown that
// has already arrived ends its run instead.
//
// Ranks are logical: a replacement takes the logical rank of the process it replaces.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "comm/control_channel.h"
#include "core/timer.h"
#include "ft/repaired_ranks.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// What a repair did: the logical ranks whose processes died and those a new process took, and
// how many rounds it took (a failure during a repair starts another).
struct RepairOutcome : ft::RepairedRanks {
  // The master was lost and this process is the new one (master_takeover.h); it held logical
  // rank `former_rank` before (-1: a spare).
  bool became_master = false;
  int former_rank = -1;
  core::Clock::time_point began{};  // when this process entered the repair
};

class JobSession {
 public:
  virtual ~JobSession() = default;

  // A spare process (fault_tolerance.spares): it waits, untrained, to replace a failed worker.
  virtual bool is_spare() const { return false; }
  // A spare: waits for a repair (true once it holds a logical rank) or the end of the run.
  virtual bool wait_for_assignment() { return false; }

  virtual comm::ControlChannel& control() = 0;
  // Logical ranks of the live workers, ascending.
  virtual std::vector<int> live_workers() const = 0;
  // Whether a process failure can be repaired (an MPI job under ULFM, a repairable thread job).
  virtual bool fault_tolerant() const = 0;
  // After a process failure, collective over every live process: repairs the job per
  // fault_tolerance.on_worker_failure and rebuilds what the session carries; context.rank
  // becomes this process's logical rank. join_info goes to newcomers (read on the master only).
  virtual RepairOutcome repair(const std::vector<std::uint8_t>& join_info) = 0;
  // The master at the end of the run: spares never called may exit.
  virtual void release_spares() {}

  // This rank's results are with the master, which may end the run without hearing from it
  // again: a process failure it sees from now on is the master's to act on (the end, above).
  // shutdown_before_repair clears it when the rank repairs after all.
  void hand_in_results() { handed_in_ = true; }
  bool results_handed_in() const { return handed_in_; }

  // What the latest repair did, on every process it left live (a spare's: the repair that gave
  // it its place); empty before any.
  const RepairOutcome& last_repair() const { return last_repair_; }

 protected:
  RepairOutcome last_repair_;

 private:
  friend std::optional<int> shutdown_before_repair(JobSession& session);
  bool handed_in_ = false;
};

// A spare's life until it trains: logs its wait, and returns true once a repair gave it a
// worker's place, false when the run ended without needing it.
bool wait_as_spare(JobSession& session, const runtime::RunContext& context);

// Runs `attempt` (a repair and what follows it) again for as long as it fails because yet
// another process failed; any other error propagates.
void repeat_while_processes_fail(const std::function<void()>& attempt);

// The line a surviving worker logs once it trains again (the benches read it).
void log_recovery_pause(double seconds);

// The master, at the very end: Shutdown{code} to each of `ranks`, then flush_at_end.
void send_shutdown(comm::ControlChannel& control, const std::vector<int>& ranks, int code);
// Waits until every message sent is taken; a process failure meanwhile is logged, not
// repaired (the run is over for this rank).
void flush_at_end(comm::ControlChannel& control);

// A rank that saw a process failure, before it repairs: the master's Shutdown code if the
// Shutdown has arrived (nothing is left to repair), else nothing (repair). A rank that has
// handed in its results first waits for the master's word: its Shutdown, or a repair begun
// (the channel revoked), or the master's failure; RuntimeError after the channel's timeout
// with none of them.
std::optional<int> shutdown_before_repair(JobSession& session);

}  // namespace gradshare::train
