// window.h: an owning MPI RMA window (RAII): MPI_Win_allocate'd memory with a passive-target
// MPI_Win_lock_all epoch held for the window's whole life, MPI_ERRORS_RETURN set.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace gradshare::comm {

class Window {
 public:
  // Collective over `comm`: allocates `bytes` of local window memory (displacement unit 1),
  // zero-fills it and opens the lock_all epoch. Peers must not write before they know the
  // zero-fill happened (gradshare's data plane orders that with its setup handshake).
  Window(MPI_Comm comm, std::size_t bytes);
  // Closes the epoch and frees the window: collective, so every rank must destroy it at the
  // same point. During exception unwinding the window is abandoned instead (see abandon()).
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  MPI_Win handle() const { return win_; }
  std::uint8_t* base() const { return base_; }
  std::size_t bytes() const { return bytes_; }

  // MPI_Win_sync: makes peers' completed Puts into local memory visible to local loads.
  void sync();
  // MPI_Put of `length` bytes to `target` at byte displacement `displacement` (not yet complete).
  void put(const void* source, std::size_t length, int target, std::size_t displacement);
  // MPI_Get of `length` bytes from `target` at byte displacement `displacement` into
  // `destination` (complete after the next flush of `target`).
  void get(void* destination, std::size_t length, int target, std::size_t displacement);
  // MPI_Win_flush: every Put to `target` so far is complete at the target, and every Get from
  // it complete here.
  void flush(int target);

  // After a process failure: MPI_Win_free is collective and would fail or hang, so the handle
  // and its memory are dropped without it (a deliberate leak; ULFM cannot free it either).
  void abandon();

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  std::uint8_t* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace gradshare::comm
