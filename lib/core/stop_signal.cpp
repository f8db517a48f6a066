#include "core/stop_signal.h"

#include <atomic>
#include <csignal>

namespace gradshare::core {

namespace {
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  // Only the first signal is recorded; later ones are ignored.
  g_stop_signal.compare_exchange_strong(expected, signal_number);
}
}  // namespace

void install_signal_handler(void (*handler)(int), std::initializer_list<int> signals) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : signals) sigaction(signal, &action, nullptr);
}

void install_stop_signal_handlers() { install_signal_handler(on_stop_signal, {SIGTERM, SIGUSR1}); }

bool stop_requested() { return g_stop_signal.load(std::memory_order_relaxed) != 0; }

const char* stop_signal_name() {
  switch (g_stop_signal.load()) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case 0: return "";
    default: return "signal";
  }
}

}  // namespace gradshare::core
