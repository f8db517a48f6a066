// ft/heartbeat.cpp: HeartbeatThread (see heartbeat.h).
#include "ft/heartbeat.h"

#include <chrono>
#include <exception>

namespace gradshare::ft {

HeartbeatThread::HeartbeatThread(double period_seconds, double stall_seconds,
                                 std::function<void()> beat)
    : period_seconds_(period_seconds), stall_seconds_(stall_seconds), beat_(std::move(beat)) {
  thread_ = std::thread([this] { run(); });
}

HeartbeatThread::~HeartbeatThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void HeartbeatThread::pause() {
  std::lock_guard lock(mutex_);  // a beat runs under the lock: it is over once this returns
  paused_ = true;
}

void HeartbeatThread::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
    failed_ = false;
  }
  alive();
  changed_.notify_all();
}

void HeartbeatThread::run() {
  const auto period = std::chrono::duration<double>(period_seconds_);
  std::uint64_t seen = progress_.load(std::memory_order_relaxed);
  core::Stopwatch since_progress;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    changed_.wait_for(lock, period);
    if (stopping_) break;
    const std::uint64_t now = progress_.load(std::memory_order_relaxed);
    if (now != seen) {
      seen = now;
      since_progress.restart();
    }
    if (paused_ || failed_ || since_progress.seconds() > stall_seconds_) continue;
    try {
      beat_();
      ++beats_;
    } catch (const std::exception&) {
      failed_ = true;
    }
  }
}

}  // namespace gradshare::ft
