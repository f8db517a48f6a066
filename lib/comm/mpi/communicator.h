// communicator.h: an owning MPI communicator handle (RAII) with MPI_ERRORS_RETURN set.
#pragma once

#include <mpi.h>

namespace gradshare::comm {

class Communicator {
 public:
  Communicator() = default;
  // Takes ownership of `comm` (freed with MPI_Comm_free) and sets MPI_ERRORS_RETURN on it.
  explicit Communicator(MPI_Comm comm);
  // MPI_Comm_dup of `comm` (collective over it).
  static Communicator duplicate(MPI_Comm comm);
  ~Communicator();

  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  MPI_Comm get() const { return comm_; }
  // The communicator, or MPI_COMM_WORLD where there is none.
  MPI_Comm get_or_world() const { return comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD; }
  explicit operator bool() const { return comm_ != MPI_COMM_NULL; }
  int rank() const;
  int size() const;
  // Gives up ownership without freeing (e.g. to hand the handle to ULFM repair code).
  MPI_Comm release();

 private:
  void reset();
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// True between MPI_Init and MPI_Finalize: destructors only free MPI objects then.
bool mpi_active();

// From the first process failure on, communicators are dropped without MPI_Comm_free: a freed
// communicator's context ID can be reused by the next one (the repaired communicator) while
// messages sent on the old one are still arriving, and Open MPI 5.0.7's ob1 then ends the
// process (seen here: exit(-1) from mca_pml_ob1_add_comm inside MPIX_Comm_shrink). A few
// communicators per failure stay allocated until the end of the run.
void stop_freeing_communicators();

}  // namespace gradshare::comm
