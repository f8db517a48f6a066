// job_session.cpp: the steps around a repair and around the end of a run (job_session.h).
#include "train/job_session.h"

#include <cstdio>
#include <string>

#include "comm/transport_error.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/messages.h"

namespace gradshare::train {

bool wait_as_spare(JobSession& session, const runtime::RunContext& context) {
  core::log_info("spare: waiting to replace a worker or the master that fails");
  if (!session.wait_for_assignment()) {
    core::log_info("spare: released, not needed");
    return false;
  }
  core::log_info("spare: taking the place of rank " + std::to_string(context.rank));
  return true;
}

void repeat_while_processes_fail(const std::function<void()>& attempt) {
  for (;;) {
    try {
      attempt();
      return;
    } catch (const comm::TransportError& error) {
      if (!error.is_process_failure()) throw;
      core::log_warn(std::string("another process failed during recovery: ") + error.what());
    }
  }
}

void flush_at_end(comm::ControlChannel& control) {
  try {
    control.flush();
  } catch (const comm::TransportError& error) {
    if (!error.is_process_failure()) throw;
    core::log_warn(std::string("a process failed at the end of the run (") + error.what() +
                   "): nothing is left to repair");
  }
}

void send_shutdown(comm::ControlChannel& control, const std::vector<int>& ranks, int code) {
  for (int rank : ranks) {
    try {
      send(control, rank, Shutdown{code});
    } catch (const comm::TransportError& error) {
      if (!error.is_process_failure()) throw;  // the others are still told
    }
  }
  flush_at_end(control);
}

namespace {

std::optional<int> arrived_shutdown(comm::ControlChannel& control) {
  const auto message = control.try_receive_despite_failures(Shutdown::kTag, 0);
  if (!message) return std::nullopt;
  core::log_warn("a process failed after the master ended the run: nothing is left to repair");
  return decode<Shutdown>(*message).exit_code;
}

}  // namespace

std::optional<int> shutdown_before_repair(JobSession& session) {
  auto& control = session.control();
  if (const auto code = arrived_shutdown(control)) return code;
  if (session.handed_in_) {
    core::log_warn("a process failed after this rank handed in its results: waiting for the "
                   "master to end the run or to repair it");
    core::Deadline deadline(control.timeout_seconds());
    core::Backoff backoff;
    for (;;) {
      // Read first: a Shutdown that came just before the master failed still ends the run.
      const bool master_acted = control.repair_begun_or_failed(0);
      if (const auto code = arrived_shutdown(control)) return code;
      if (master_acted) break;
      if (deadline.expired())
        throw core::RuntimeError(comm::timeout_message(
            control.timeout_seconds(), 0,
            "its end of the run or a repair after a process failure (transport.timeout_ms)"));
      backoff.wait();
    }
  }
  session.handed_in_ = false;  // the repair may ask for them again
  return std::nullopt;
}

void log_recovery_pause(double seconds) {
  char line[96];
  std::snprintf(line, sizeof line, "training paused %.3f s by the recovery", seconds);
  core::log_info(line);
}

}  // namespace gradshare::train
