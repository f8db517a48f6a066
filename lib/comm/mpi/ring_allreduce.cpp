// ring_allreduce.cpp: ring_allreduce_sum.
#include "comm/mpi/ring_allreduce.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "comm/mpi/mpi_error.h"
#include "core/errors.h"

namespace gradshare::comm {

namespace {

// Chunk c of n elements cut into p: [begin(c), begin(c + 1)).
std::size_t chunk_begin(std::size_t n, int p, int c) {
  return static_cast<std::size_t>(static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(c) /
                                  static_cast<std::uint64_t>(p));
}

int mod(int a, int p) { return ((a % p) + p) % p; }

int count_of(std::size_t size) {
  GS_CHECK(size <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "ring all-reduce chunk of " + std::to_string(size) + " elements");
  return static_cast<int>(size);
}

}  // namespace

void ring_allreduce_sum(MPI_Comm comm, std::span<float> values, std::vector<float>& scratch) {
  int p = 1, r = 0;
  check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  if (p == 1) return;
  const std::size_t n = values.size();
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  const auto size_of = [&](int c) { return chunk_begin(n, p, c + 1) - chunk_begin(n, p, c); };
  scratch.resize(std::max(scratch.size(), size_of(0) + 1));  // chunk sizes differ by at most 1
  constexpr int kTag = 0;                                    // the group's communicator is ours
  for (int s = 0; s < p - 1; ++s) {
    const int out = mod(r - s, p), in = mod(r - s - 1, p);
    check_mpi(MPI_Sendrecv(values.data() + chunk_begin(n, p, out), count_of(size_of(out)),
                           MPI_FLOAT, right, kTag, scratch.data(), count_of(size_of(in)), MPI_FLOAT,
                           left, kTag, comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
    float* mine = values.data() + chunk_begin(n, p, in);
    // received (the chunk's members before this one) + this member: the documented order
    for (std::size_t i = 0, m = size_of(in); i < m; ++i) mine[i] = scratch[i] + mine[i];
  }
  for (int s = 0; s < p - 1; ++s) {
    const int out = mod(r + 1 - s, p), in = mod(r - s, p);
    check_mpi(MPI_Sendrecv(values.data() + chunk_begin(n, p, out), count_of(size_of(out)),
                           MPI_FLOAT, right, kTag, values.data() + chunk_begin(n, p, in),
                           count_of(size_of(in)), MPI_FLOAT, left, kTag, comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  }
}

}  // namespace gradshare::comm
