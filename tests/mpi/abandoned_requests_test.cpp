// abandoned_requests_test.cpp: requests abandoned while in flight (comm/mpi/abandoned_requests.h)
// on real ranks (run with 2):
//   - a send abandoned before its receiver matched it still delivers its bytes, though the
//     owner's buffer was moved away, and is let go once it has finished;
//   - an abandoned receive is cancelled: the message that comes later goes to a new receive.
//   mpirun -n 2 mpi_abandoned_requests_test
#include "comm/mpi/abandoned_requests.h"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_check.h"

namespace {

using namespace gradshare;

constexpr int kSendTag = 11, kReceiveTag = 12;
// Above every shared-memory and TCP eager limit: the send cannot finish before it is matched.
constexpr int kLargeBytes = 4 << 20;

std::uint8_t pattern(int i) { return static_cast<std::uint8_t>(i * 131 + 7); }

void wait_until_none_kept() {
  while (comm::abandoned_requests() != 0) {
  }
}

void abandoned_send(int rank, mpi_testing::Checker& check) {
  if (rank == 0) {
    std::vector<std::uint8_t> bytes(kLargeBytes);
    for (int i = 0; i < kLargeBytes; ++i) bytes[i] = pattern(i);
    MPI_Request request;
    MPI_Isend(bytes.data(), kLargeBytes, MPI_BYTE, 1, kSendTag, MPI_COMM_WORLD, &request);
    comm::abandon_send(request, std::move(bytes));
    check.expect(request == MPI_REQUEST_NULL, "the owner's request is null after abandon_send");
    check.expect(comm::abandoned_requests() == 1, "an unmatched send is kept");
    MPI_Barrier(MPI_COMM_WORLD);  // only now does rank 1 receive
    wait_until_none_kept();
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<std::uint8_t> got(kLargeBytes);
    MPI_Recv(got.data(), kLargeBytes, MPI_BYTE, 0, kSendTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int wrong = 0;
    for (int i = 0; i < kLargeBytes; ++i) wrong += got[i] != pattern(i);
    check.expect(wrong == 0, std::to_string(wrong) + " bytes of the abandoned send differ");
  }
}

void abandoned_receive(int rank, mpi_testing::Checker& check) {
  if (rank == 1) {
    std::vector<std::uint8_t> abandoned(8);
    MPI_Request request;
    MPI_Irecv(abandoned.data(), 8, MPI_BYTE, 0, kReceiveTag, MPI_COMM_WORLD, &request);
    comm::abandon_receive(request, std::move(abandoned));
    wait_until_none_kept();       // cancelled, so it finishes without a message
    MPI_Barrier(MPI_COMM_WORLD);  // only now does rank 0 send
    std::uint64_t value = 0;
    MPI_Recv(&value, 8, MPI_BYTE, 0, kReceiveTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check.expect(value == 42, "the message after an abandoned receive: " + std::to_string(value));
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    const std::uint64_t value = 42;
    MPI_Send(&value, 8, MPI_BYTE, 1, kReceiveTag, MPI_COMM_WORLD);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_testing::Checker check(rank);
  if (check.expect(size == 2, "run with 2 ranks")) {
    abandoned_send(rank, check);
    abandoned_receive(rank, check);
  }
  const int code = check.finish(MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
