#include "core/timer.h"

#include <algorithm>
#include <thread>

namespace gradshare::core {

void Backoff::wait() {
  std::this_thread::sleep_for(std::chrono::microseconds(current_us_));
  current_us_ = std::min(current_us_ * 2, max_us_);
}

}  // namespace gradshare::core
