// mpi_error.cpp: MPI error codes -> MpiError.
#include "comm/mpi/mpi_error.h"

#if defined(GRADSHARE_HAVE_ULFM)
#include <mpi-ext.h>
#endif

namespace gradshare::comm {

bool is_process_failure_class(int error_class) {
#if defined(GRADSHARE_HAVE_ULFM)
  return error_class == MPIX_ERR_PROC_FAILED || error_class == MPIX_ERR_PROC_FAILED_PENDING ||
         error_class == MPIX_ERR_REVOKED;
#else
  return false;
#endif
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS || length <= 0)
    return "unknown MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void throw_mpi_error(int rc, const char* call) {
  int error_class = rc;
  if (MPI_Error_class(rc, &error_class) != MPI_SUCCESS) error_class = rc;
  throw MpiError(std::string(call) + " failed: " + mpi_error_string(rc) + " (MPI error class " +
                     std::to_string(error_class) + ")",
                 rc, error_class);
}

void check_mpi_statuses(int rc, std::span<const MPI_Status> statuses, const char* call) {
  if (rc == MPI_ERR_IN_STATUS)
    for (const MPI_Status& status : statuses)
      if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING)
        throw_mpi_error(status.MPI_ERROR, call);
  check_mpi(rc, call);
}

}  // namespace gradshare::comm
