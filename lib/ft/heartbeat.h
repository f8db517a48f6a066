// ft/heartbeat.h: a worker's heartbeats (fault_tolerance.heartbeat_ms), sent from a thread of
// their own so that nothing the training thread does can starve them: a step or a checkpoint
// that takes longer than fault_tolerance.timeout_ms no longer makes a live worker look dead.
//
// A frozen process (SIGSTOP, a node that stops scheduling it) stops every thread and so its
// beats too. A training thread that is stuck while the process runs would keep beating from
// here; so the training thread reports progress (alive()) at every step and every poll of its
// loops, and the beats stop once it has reported none for fault_tolerance.stall_timeout_ms.
// That bound is for a stuck thread, not for a slow step: it must exceed the longest step.
//
// beat() runs on the heartbeat thread; what it throws (a failed peer: the channel is revoked)
// stops the beats until resume(): the training thread meets the failure on its own calls and
// repairs the job, with the beats paused, since the repair replaces the channel they use.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/timer.h"

namespace gradshare::ft {

class HeartbeatThread {
 public:
  HeartbeatThread(double period_seconds, double stall_seconds, std::function<void()> beat);
  ~HeartbeatThread();
  HeartbeatThread(const HeartbeatThread&) = delete;
  HeartbeatThread& operator=(const HeartbeatThread&) = delete;

  // The training thread made progress.
  void alive() { progress_.fetch_add(1, std::memory_order_relaxed); }
  // No beat runs between pause() and resume() (a beat under way is waited for).
  void pause();
  void resume();
  // Beats sent so far.
  std::int64_t beats() const { return beats_.load(); }

 private:
  void run();

  double period_seconds_;
  double stall_seconds_;
  std::function<void()> beat_;
  std::atomic<std::uint64_t> progress_{0};
  std::atomic<std::int64_t> beats_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  bool failed_ = false;  // beat() threw: no beats until resume()
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gradshare::ft
