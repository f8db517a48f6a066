// shared_cores.h: the cores the simulated ranks share, as the kernel shares them (processor
// sharing): when more ranks want to run than there are cores, each runs slower by
// runnable / cores. A rank asleep until its next message does not count. No cores given: every
// rank has its own. `reserved`: a share of a core taken all along (EventSetup::master_cpu_share),
// which the others cannot use. The slowdown is fixed when a burst starts, so ranks that sleep
// and wake meanwhile can make the cores seem to do more than they have: the CPU asked for while
// counting bounds the step time (EventResult).
#pragma once

#include <algorithm>

namespace gradshare::sim {

class Cores {
 public:
  Cores(int cores, double reserved) : cores_(cores), available_(std::max(cores - reserved, 0.1)) {}
  void set_runnable(int runnable) { runnable_ = runnable; }
  // Runs `seconds` of CPU from `at`; returns when it ends.
  double run(double at, double seconds) {
    if (counting_) demanded_ += seconds;
    if (cores_ <= 0 || runnable_ <= available_) return at + seconds;
    return at + seconds * static_cast<double>(runnable_) / available_;
  }
  double available() const { return available_; }
  void count(bool on) { counting_ = on; }
  bool counting() const { return counting_; }
  double demanded() const { return demanded_; }  // CPU seconds run while counting

 private:
  int cores_;
  double available_;
  int runnable_ = 0;
  bool counting_ = false;
  double demanded_ = 0;
};

}  // namespace gradshare::sim
