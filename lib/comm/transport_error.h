// transport_error.h: what a failed call of a transport throws (MPI's: comm/mpi_error.h): a
// RuntimeError that also says whether the cause was a failed peer process (ULFM reports one;
// the job can then be repaired) or anything else.
#pragma once

#include <string>

#include "core/errors.h"

namespace gradshare::comm {

class TransportError : public core::RuntimeError {
 public:
  TransportError(const std::string& message, bool process_failure)
      : core::RuntimeError(message), process_failure_(process_failure) {}
  // A peer process failed or the communicator was revoked (ULFM); false without ULFM.
  bool is_process_failure() const { return process_failure_; }

 private:
  bool process_failure_;
};

}  // namespace gradshare::comm
