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

struct ChildEnd {
  int code = 0;          // exit code; 128 + N when signal N ended it; 127: could not be executed
  bool hung = false;     // killed by us: it outlived all its own children (see run_child)
};

// Runs `command` (PATH lookup) to its end. A launcher whose processes have all ended but which
// does not exit (Open MPI 5.0.7's prterun was seen to after a rank died in MPI_Init) is killed
// with SIGKILL once it has had children and then none alive for `childless_seconds`; a command
// that never had a child is left alone.
ChildEnd run_child(const std::vector<std::string>& command, double childless_seconds);

// Sleeps up to `seconds`; returns early (false) when a stop signal arrives.
bool sleep_unless_stopped(double seconds);

}  // namespace gradshare::supervise
