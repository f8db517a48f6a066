// collective_watchdog.cpp: CollectiveWatchdog (see collective_watchdog.h).
#include "comm/collective_watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace gradshare::comm {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

CollectiveWatchdog::CollectiveWatchdog(double timeout_seconds)
    : timeout_seconds_(timeout_seconds), thread_([this] { run(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog& dog, const char* what) : dog_(dog) {
  dog_.what_.store(what, std::memory_order_relaxed);
  dog_.since_ns_.store(now_ns(), std::memory_order_release);
}

CollectiveWatchdog::Watch::~Watch() { dog_.since_ns_.store(0, std::memory_order_release); }

void CollectiveWatchdog::run() {
  // Checked a few times per deadline (at least every second): the line comes soon after it.
  const auto period = std::chrono::duration<double>(std::min(1.0, timeout_seconds_ / 4));
  std::unique_lock lock(mutex_);
  while (!stop_.wait_for(lock, period, [this] { return stopping_; })) {
    const std::int64_t since = since_ns_.load(std::memory_order_acquire);
    if (since == 0 || static_cast<double>(now_ns() - since) / 1e9 < timeout_seconds_) continue;
    std::fprintf(stderr,
                 "gradshare: error: %s did not complete within %.0f s (transport.timeout_ms): "
                 "a process it waits for is gone; ending this process so the job ends\n",
                 what_.load(std::memory_order_relaxed), timeout_seconds_);
    std::fflush(nullptr);
    std::_Exit(core::kExitRuntimeFailure);
  }
}

}  // namespace gradshare::comm
