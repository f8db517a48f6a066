// communicator.cpp: Communicator.
#include "comm/mpi/communicator.h"

#include <atomic>
#include <utility>

#include "comm/mpi/mpi_error.h"

namespace gradshare::comm {

bool mpi_active() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  if (comm_ != MPI_COMM_NULL)
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

Communicator Communicator::duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &copy), "MPI_Comm_dup");
  return Communicator(copy);
}

Communicator::~Communicator() { reset(); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    reset();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

int Communicator::rank() const {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  return rank;
}

int Communicator::size() const {
  int size = 0;
  check_mpi(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  return size;
}

MPI_Comm Communicator::release() { return std::exchange(comm_, MPI_COMM_NULL); }

namespace {
std::atomic<bool> keep_communicators{false};
}  // namespace

void stop_freeing_communicators() { keep_communicators = true; }

void Communicator::reset() {
  // MPI_Comm_free is local in practice (also on a revoked communicator under ULFM); an error
  // here cannot be reported from a destructor, so it is ignored.
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF && mpi_active() &&
      !keep_communicators)
    MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace gradshare::comm
