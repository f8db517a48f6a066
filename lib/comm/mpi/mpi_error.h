// mpi_error.h: turns MPI return codes into exceptions that name the call and explain the code.
// Every communicator and window gradshare creates has MPI_ERRORS_RETURN, so failures come back
// as codes and end here instead of aborting the job without a word.
#pragma once

#include <mpi.h>

#include <span>
#include <string>

#include "comm/transport_error.h"

namespace gradshare::comm {

// Whether an MPI error class means a failed peer (ULFM: MPI_ERR_PROC_FAILED, _PENDING,
// MPI_ERR_REVOKED); false without ULFM.
bool is_process_failure_class(int error_class);

// An MPI call failed. A TransportError, so callers that do not care about MPI see one; fault
// tolerance catches it to tell a failed peer from the rest.
class MpiError : public TransportError {
 public:
  MpiError(const std::string& message, int code, int error_class)
      : TransportError(message, is_process_failure_class(error_class)),
        code_(code),
        error_class_(error_class) {}
  int code() const { return code_; }
  int error_class() const { return error_class_; }

 private:
  int code_;
  int error_class_;
};

// MPI_Error_string of `code` (or "unknown MPI error N" when MPI cannot describe it).
std::string mpi_error_string(int code);

// Throws MpiError "<call> failed: <MPI_Error_string> (MPI error class N)".
[[noreturn]] void throw_mpi_error(int rc, const char* call);

// Throws as above unless rc is MPI_SUCCESS. `call` names the MPI function, e.g. "MPI_Put".
inline void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(rc, call);
}

// check_mpi for the calls on several requests (MPI_Testall, MPI_Testsome): their
// MPI_ERR_IN_STATUS says only that some request failed; the first failed request's own code
// is thrown instead, so that a lost peer under ULFM is seen as the process failure it is.
void check_mpi_statuses(int rc, std::span<const MPI_Status> statuses, const char* call);

}  // namespace gradshare::comm
