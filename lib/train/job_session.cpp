// job_session.cpp: wait_as_spare, repeat_while_processes_fail, log_recovery_pause.
#include "train/job_session.h"

#include <cstdio>
#include <string>

#include "comm/transport_error.h"
#include "core/log.h"
#include "train/messages.h"

namespace gradshare::train {

bool wait_as_spare(JobSession& session, const RunContext& context) {
  core::log_info("spare: waiting to replace a worker that fails");
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

std::optional<int> shutdown_before_repair(comm::ControlChannel& control) {
  const auto message = control.try_receive_despite_failures(Shutdown::kTag, 0);
  if (!message) return std::nullopt;
  core::log_warn("a process failed after the master ended the run: nothing is left to repair");
  return decode<Shutdown>(*message).exit_code;
}

void log_recovery_pause(double seconds) {
  char line[96];
  std::snprintf(line, sizeof line, "training paused %.3f s by the recovery", seconds);
  core::log_info(line);
}

}  // namespace gradshare::train
