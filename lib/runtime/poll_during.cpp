#include "runtime/poll_during.h"

#include <chrono>
#include <future>

#include "core/timer.h"

namespace gradshare::runtime {

void poll_during(const std::function<void()>& work, const std::function<std::size_t()>& poll) {
  auto done = std::async(std::launch::async, work);
  core::Backoff backoff;
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    if (poll() > 0) backoff.reset(); else backoff.wait();
  }
  done.get();
}

}  // namespace gradshare::runtime
