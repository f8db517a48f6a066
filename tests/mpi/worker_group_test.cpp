// worker_group_test.cpp: the MPI workers' group on real ranks (run with 2 or more): its float sum
// follows the documented ring order bit for bit (comm/ring_allreduce.h), gives every member the
// same bits, and does not change when the members' placement does (the same sum on a
// communicator whose ranks were permuted, with each value moving with its index).
//   mpirun -n 4 mpi_worker_group_test
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi/mpi_worker_group.h"
#include "core/rng.h"
#include "mpi_check.h"

namespace {

using namespace gradshare;

// Member m's values: spread over many magnitudes, so the order of a float sum shows in the bits.
std::vector<float> values_of(int member, std::size_t n) {
  core::Rng rng(1000 + static_cast<std::uint64_t>(member) * 7919 + n);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.uniform() * 40) - 20));
  return v;
}

// The documented order, written independently of the library: chunk c = [n c / p, n (c+1) / p)
// is summed from member c on, around the ring.
std::vector<float> ring_order_sum(int p, std::size_t n) {
  std::vector<std::vector<float>> members;
  for (int m = 0; m < p; ++m) members.push_back(values_of(m, n));
  std::vector<float> sum(n);
  for (int c = 0; c < p; ++c) {
    const std::size_t begin = n * static_cast<std::size_t>(c) / static_cast<std::size_t>(p);
    const std::size_t end = n * static_cast<std::size_t>(c + 1) / static_cast<std::size_t>(p);
    for (std::size_t i = begin; i < end; ++i) {
      float total = members[static_cast<std::size_t>(c)][i];
      for (int k = 1; k < p; ++k) total = total + members[static_cast<std::size_t>((c + k) % p)][i];
      sum[i] = total;
    }
  }
  return sum;
}

// The index-order sum ((x0 + x1) + x2) + ..., which differs from the ring order in some bits:
// proves the test can tell the orders apart.
std::vector<float> index_order_sum(int p, std::size_t n) {
  std::vector<float> sum = values_of(0, n);
  for (int m = 1; m < p; ++m) {
    const auto v = values_of(m, n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = sum[i] + v[i];
  }
  return sum;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void check_sums(MPI_Comm comm, mpi_testing::Checker& check, const std::string& label) {
  MPI_Comm mine = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &mine);
  comm::MpiWorkerGroup group(mine, 60.0);
  const int p = group.size();
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                              std::size_t{7}, std::size_t{1000}, std::size_t{235146}}) {
    auto values = values_of(group.index(), n);
    group.allreduce_sum(values);
    check.expect(same_bits(values, ring_order_sum(p, n)),
                 label + ": the sum of " + std::to_string(n) + " elements follows the ring order");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_testing::Checker check(rank);
  if (size < 2) {
    std::fprintf(stderr, "run with 2 or more ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0)
    check.expect(!same_bits(ring_order_sum(size, 235146), index_order_sum(size, 235146)) || size < 3,
                 "the test values tell the ring order from index order");
  check_sums(MPI_COMM_WORLD, check, "in rank order");
  // The same members (index = world rank) placed on other processes: a communicator whose ranks
  // are a rotation of the world's, each process taking the values of its new index.
  MPI_Comm rotated = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % size, &rotated);
  check_sums(rotated, check, "rotated");
  MPI_Comm_free(&rotated);
  const int failed = check.finish(MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
