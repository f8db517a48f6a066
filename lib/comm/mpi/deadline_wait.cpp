// deadline_wait.cpp: wait_all.
#include "comm/mpi/deadline_wait.h"

#include <vector>

#include "comm/mpi/mpi_error.h"
#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::comm {

void wait_all(std::span<MPI_Request> requests, std::span<const int> peers, double timeout_seconds,
              std::string_view awaited) {
  GS_CHECK(requests.size() == peers.size());
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  std::vector<int> indices(requests.size());
  while (true) {
    // MPI_Testsome (unlike MPI_Testall) nulls each completed request, so what is left at a
    // timeout is exactly what is still pending.
    int completed = 0;
    check_mpi(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed,
                           indices.data(), MPI_STATUSES_IGNORE),
              "MPI_Testsome");
    if (completed == MPI_UNDEFINED) return;  // no active request left
    if (completed > 0) {
      backoff.reset();
      continue;
    }
    if (deadline.expired()) break;
    backoff.wait();
  }
  int first_pending = -1;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    if (first_pending < 0) first_pending = peers[i];
    MPI_Cancel(&requests[i]);
    MPI_Request_free(&requests[i]);
  }
  throw core::RuntimeError(timeout_message(timeout_seconds, first_pending, awaited));
}

}  // namespace gradshare::comm
