// allreduce_bench.cpp: seconds per float sum of the ring all-reduce the synchronous strategies'
// workers use (comm/ring_allreduce.h, placement-independent bits) beside MPI_Allreduce, for the
// sizes those strategies reduce: a few control values, the MLP (235,146 parameters), parameter
// averaging's MLP state (3 x), the CNN (3.3 M). The two alternate call by call, so load on a
// shared machine hits both alike; the ratio is what to read.
//   mpirun -n 4 build/bench/allreduce_bench [--reps N]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi/ring_allreduce.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int reps = 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  if (rank == 0)
    std::printf("%d ranks, median of %d calls each\n%12s %14s %14s %8s\n", size, reps, "floats",
                "MPI_Allreduce", "ring", "ring/MPI");
  std::vector<float> scratch;
  for (const std::size_t n : {std::size_t{8}, std::size_t{235146}, std::size_t{705438},
                              std::size_t{3274634}}) {
    std::vector<float> values(n, 1.0f);
    std::vector<double> mpi, ring;
    for (int rep = 0; rep < reps + 1; ++rep) {  // the first call of each warms up
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      double end = MPI_Wtime();
      if (rep > 0) mpi.push_back(end - start);
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
      gradshare::comm::ring_allreduce_sum(MPI_COMM_WORLD, values, scratch);
      end = MPI_Wtime();
      if (rep > 0) ring.push_back(end - start);
      std::fill(values.begin(), values.end(), 1.0f);
    }
    // The slowest rank's time per call is the collective's.
    double times[2] = {median(mpi), median(ring)}, slowest[2];
    MPI_Reduce(times, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("%12zu %12.3f ms %12.3f ms %8.2f\n", n, 1e3 * slowest[0], 1e3 * slowest[1],
                  slowest[1] / slowest[0]);
  }
  MPI_Finalize();
  return 0;
}
