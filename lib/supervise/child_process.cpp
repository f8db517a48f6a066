#include "supervise/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/stop_signal.h"

namespace gradshare::supervise {

namespace {

volatile std::sig_atomic_t child_pid = 0;
volatile std::sig_atomic_t stop_received = 0;

void pass_on(int signal) {
  stop_received = 1;
  if (child_pid > 0) kill(static_cast<pid_t>(child_pid), signal);
}

// Whether `parent` has a child process that is not a zombie (from /proc/<pid>/stat: the state
// and the parent pid follow the command name's closing parenthesis).
bool has_live_child(pid_t parent) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) continue;
    if (ppid == parent && state != 'Z' && state != 'X') return true;
  }
  return false;
}

}  // namespace

void forward_stop_signals() {
  core::install_signal_handler(pass_on, {SIGTERM, SIGUSR1, SIGINT});
}

bool stop_signal_received() { return stop_received != 0; }

ChildEnd run_child(const std::vector<std::string>& command, double childless_seconds) {
  std::vector<char*> argv;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "gradshare run: fork failed: %s\n", std::strerror(errno));
    return {127, false};
  }
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "gradshare run: cannot execute '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  ChildEnd end;
  bool had_children = false;
  auto childless_since = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      child_pid = 0;
      end.code = 1;
      return end;
    }
    const auto now = std::chrono::steady_clock::now();
    if (has_live_child(pid)) {
      had_children = true;
      childless_since = now;
    } else if (had_children && !end.hung &&
               std::chrono::duration<double>(now - childless_since).count() >= childless_seconds) {
      end.hung = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  child_pid = 0;
  end.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return end;
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
