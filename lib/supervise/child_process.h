// child_process.h: runs a command as a child process and waits for it, passing the stop
// signals (SIGTERM, SIGUSR1, SIGINT) that reach this process on to it.
#pragma once

#include <string>
#include <vector>

namespace gradshare::supervise {

// Installs the handlers that pass stop signals on; call once before the first run_child.
void forward_stop_signals();
// True once a stop signal reached this process.
bool stop_signal_received();

// Runs `command` (PATH lookup) to its end. Returns its exit code, 128 + N when signal N ended
// it, and 127 when it could not be executed (the reason on stderr).
int run_child(const std::vector<std::string>& command);

// Sleeps up to `seconds`; returns early (false) when a stop signal arrives.
bool sleep_unless_stopped(double seconds);

}  // namespace gradshare::supervise
