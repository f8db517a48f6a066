// poll_guard.h: rejects a DataPlane::poll re-entered from its own message handler.
#pragma once

#include "core/errors.h"

namespace gradshare::comm {

class PollGuard {
 public:
  explicit PollGuard(bool& polling) : polling_(polling) {
    GS_CHECK(!polling_, "DataPlane::poll called from inside its own message handler");
    polling_ = true;
  }
  ~PollGuard() { polling_ = false; }
  PollGuard(const PollGuard&) = delete;
  PollGuard& operator=(const PollGuard&) = delete;

 private:
  bool& polling_;
};

}  // namespace gradshare::comm
