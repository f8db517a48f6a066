// window.cpp: Window.
#include "comm/mpi/window.h"

#include <cstring>
#include <exception>
#include <limits>

#include "comm/mpi/communicator.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"

namespace gradshare::comm {

Window::Window(MPI_Comm comm, std::size_t bytes) : bytes_(bytes) {
  GS_CHECK(bytes <= static_cast<std::size_t>(std::numeric_limits<MPI_Aint>::max()),
           "window of " + std::to_string(bytes) + " bytes");
  void* memory = nullptr;
  const int code =
      MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &memory, &win_);
  // A process lost during the allocation's collectives comes back as MPI_ERR_WIN (Open MPI
  // 5.0.7's osc), not as a process failure: said as the failure it is, so that it is repaired.
  if (code != MPI_SUCCESS && fault_tolerance_active()) check_for_failures(comm);
  check_mpi(code, "MPI_Win_allocate");
  base_ = static_cast<std::uint8_t*>(memory);
  if (bytes > 0) std::memset(base_, 0, bytes);
  check_mpi(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
}

Window::~Window() {
  if (win_ == MPI_WIN_NULL || !mpi_active()) return;
  if (std::uncaught_exceptions() > 0) {
    // Peers are probably not at the same point: a collective free could hang the unwinding.
    abandon();
    return;
  }
  // Errors cannot be reported from a destructor.
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
}

void Window::sync() { check_mpi(MPI_Win_sync(win_), "MPI_Win_sync"); }

void Window::put(const void* source, std::size_t length, int target, std::size_t displacement) {
  GS_CHECK(length <= static_cast<std::size_t>(std::numeric_limits<int>::max()));
  check_mpi(MPI_Put(source, static_cast<int>(length), MPI_BYTE, target,
                    static_cast<MPI_Aint>(displacement), static_cast<int>(length), MPI_BYTE, win_),
            "MPI_Put");
}

void Window::get(void* destination, std::size_t length, int target, std::size_t displacement) {
  GS_CHECK(length <= static_cast<std::size_t>(std::numeric_limits<int>::max()));
  check_mpi(MPI_Get(destination, static_cast<int>(length), MPI_BYTE, target,
                    static_cast<MPI_Aint>(displacement), static_cast<int>(length), MPI_BYTE, win_),
            "MPI_Get");
}

void Window::flush(int target) { check_mpi(MPI_Win_flush(target, win_), "MPI_Win_flush"); }

void Window::abandon() {
  win_ = MPI_WIN_NULL;
  base_ = nullptr;
}

}  // namespace gradshare::comm
