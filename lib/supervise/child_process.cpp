#include "supervise/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

namespace gradshare::supervise {

namespace {

volatile std::sig_atomic_t child_pid = 0;
volatile std::sig_atomic_t stop_received = 0;

void pass_on(int signal) {
  stop_received = 1;
  if (child_pid > 0) kill(static_cast<pid_t>(child_pid), signal);
}

}  // namespace

void forward_stop_signals() {
  struct sigaction action {};
  action.sa_handler = pass_on;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGTERM, SIGUSR1, SIGINT}) sigaction(signal, &action, nullptr);
}

bool stop_signal_received() { return stop_received != 0; }

int run_child(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "gradshare run: fork failed: %s\n", std::strerror(errno));
    return 127;
  }
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "gradshare run: cannot execute '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child_pid = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool sleep_unless_stopped(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (stop_signal_received()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !stop_signal_received();
}

}  // namespace gradshare::supervise
