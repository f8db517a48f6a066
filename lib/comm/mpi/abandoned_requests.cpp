// abandoned_requests.cpp: abandon_send, abandon_receive.
#include "comm/mpi/abandoned_requests.h"

#if defined(GRADSHARE_HAVE_ULFM)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <mutex>
#include <utility>

#include "comm/mpi/communicator.h"

namespace gradshare::comm {
namespace {

struct Abandoned {
  MPI_Request request;
  std::vector<std::uint8_t> buffer;
};

std::mutex& list_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<Abandoned>& kept() {
  static std::vector<Abandoned> list;
  return list;
}

// True once MPI is done with `request`, which is then released.
bool finished(MPI_Request& request) noexcept {
  int done = 0;
  const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  if (code == MPI_SUCCESS) return done != 0;  // a finished request is freed by MPI_Test
#if defined(GRADSHARE_HAVE_ULFM)
  int error_class = code;
  MPI_Error_class(code, &error_class);
  // An any-source receive that a failure left undecided: still active (it was cancelled).
  if (error_class == MPIX_ERR_PROC_FAILED_PENDING) return false;
#endif
  // Completed in error: MPI_Test leaves the request allocated, and freeing a completed request
  // raises nothing later.
  MPI_Request_free(&request);
  return true;
}

// With the list's mutex held.
void release_finished() noexcept {
  if (mpi_active()) std::erase_if(kept(), [](Abandoned& old) { return finished(old.request); });
}

void keep(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept {
  if (request == MPI_REQUEST_NULL || !mpi_active()) return;
  std::lock_guard lock(list_mutex());
  release_finished();
  if (!finished(request)) kept().push_back({request, std::move(buffer)});
  request = MPI_REQUEST_NULL;
}

}  // namespace

void abandon_send(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept {
  keep(request, std::move(buffer));
}

void abandon_receive(MPI_Request& request, std::vector<std::uint8_t>&& buffer) noexcept {
  if (request != MPI_REQUEST_NULL && mpi_active()) MPI_Cancel(&request);
  keep(request, std::move(buffer));
}

std::size_t abandoned_requests() {
  std::lock_guard lock(list_mutex());
  release_finished();
  return kept().size();
}

}  // namespace gradshare::comm
