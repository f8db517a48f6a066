// orphaned_sends.cpp: abandon_send.
#include "comm/mpi/orphaned_sends.h"

#include <mutex>
#include <utility>

namespace gradshare::comm {

void abandon_send(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept {
  int done = 0;
  if (request == MPI_REQUEST_NULL) return;
  if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) return;
  if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
  static std::mutex mutex;
  static std::vector<std::vector<std::uint8_t>> kept;
  std::lock_guard lock(mutex);
  kept.push_back(std::move(buffer));  // moving a vector keeps its heap block where it is
}

}  // namespace gradshare::comm
