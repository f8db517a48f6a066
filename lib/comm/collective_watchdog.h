// collective_watchdog.h: a deadline on blocking collectives (the workers' all-reduce and
// barrier). MPI calls have none, and under `mpirun --with-ft ulfm` Open MPI 5.0.7 was seen to
// leave the members of an all-reduce spinning for good once another member had left through
// MPI_Abort (which under ULFM ends only its caller): no call returns an error. A thread of its
// own watches the collective under way; one still running after the deadline ends this process
// with a line naming it and exit code 1, so the job ends — and `gradshare run` restarts it —
// instead of hanging. Arming and disarming cost an atomic store each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace gradshare::comm {

class CollectiveWatchdog {
 public:
  explicit CollectiveWatchdog(double timeout_seconds);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Watches one collective for as long as it lives; `what` names it in the line.
  class Watch {
   public:
    Watch(CollectiveWatchdog& dog, const char* what);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    CollectiveWatchdog& dog_;
  };

 private:
  void run();

  double timeout_seconds_;
  std::atomic<std::int64_t> since_ns_{0};  // steady-clock start of the collective; 0: none
  std::atomic<const char*> what_{""};
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gradshare::comm
