// stop_signal.h: SIGTERM and SIGUSR1 (Slurm's warning before the time limit) ask a run to stop:
// the handler only records the request; the training loops check it, checkpoint, and exit
// with kExitRequeue. A second signal while the checkpoint is written changes nothing.
#pragma once

#include <initializer_list>

namespace gradshare::core {

void install_stop_signal_handlers();
// `handler` for each of `signals`, interrupted system calls restarted (SA_RESTART).
void install_signal_handler(void (*handler)(int), std::initializer_list<int> signals);
bool stop_requested();
// The signal that asked to stop ("SIGTERM", "SIGUSR1"), or "" when none did.
const char* stop_signal_name();

}  // namespace gradshare::core
