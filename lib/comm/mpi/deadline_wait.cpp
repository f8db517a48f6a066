// deadline_wait.cpp: wait_all.
#include "comm/mpi/deadline_wait.h"

#include <algorithm>
#include <vector>

#include "comm/mpi/abandoned_requests.h"
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
  std::vector<MPI_Status> statuses(requests.size());
  while (true) {
    // MPI_Testsome (unlike MPI_Testall) nulls each completed request, so what is left at a
    // timeout is exactly what is still pending.
    int completed = 0;
    const int code = MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed,
                                  indices.data(), statuses.data());
    check_mpi_statuses(code,
                       std::span(statuses).first(static_cast<std::size_t>(std::max(completed, 0))),
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
    abandon_send(requests[i], {});  // kept, not freed: see abandoned_requests.h
  }
  throw core::RuntimeError(timeout_message(timeout_seconds, first_pending, awaited));
}

}  // namespace gradshare::comm
