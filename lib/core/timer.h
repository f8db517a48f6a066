// timer.h: monotonic wall-clock timing and a deadline type used by every wait.
#pragma once

#include <chrono>

namespace gradshare::core {

using Clock = std::chrono::steady_clock;

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  Clock::time_point start_;
};

class Deadline {
 public:
  explicit Deadline(double seconds_from_now)
      : end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(seconds_from_now))) {}
  bool expired() const { return Clock::now() >= end_; }

 private:
  Clock::time_point end_;
};

// Sleeps with exponential back-off between polls so waiting never busy-spins a core:
// starts at 1 microsecond, doubles up to max_microseconds; reset() after progress.
class Backoff {
 public:
  explicit Backoff(int max_microseconds = 2000) : max_us_(max_microseconds) {}
  void wait();
  void reset() { current_us_ = 1; }

 private:
  int max_us_;
  int current_us_ = 1;
};

}  // namespace gradshare::core
