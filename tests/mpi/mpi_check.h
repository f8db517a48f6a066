// mpi_check.h: assertions for MPI test programs (ctest runs them under mpirun). Each rank
// records its failures; finish() combines them over the communicator and gives the exit code.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

namespace gradshare::mpi_testing {

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  bool expect(bool ok, const std::string& what) {
    if (!ok) {
      ++failures_;
      std::fprintf(stderr, "rank %d: FAILED: %s\n", rank_, what.c_str());
    }
    return ok;
  }
  // Expects `text` to contain `part`.
  bool expect_contains(const std::string& text, const std::string& part) {
    return expect(text.find(part) != std::string::npos, "'" + text + "' lacks '" + part + "'");
  }
  // Collective: 0 when no rank failed, 1 otherwise.
  int finish(MPI_Comm comm) const {
    int total = 0;
    MPI_Allreduce(&failures_, &total, 1, MPI_INT, MPI_SUM, comm);
    if (rank_ == 0) std::printf("%s: %d failed checks\n", total == 0 ? "PASSED" : "FAILED", total);
    return total == 0 ? 0 : 1;
  }

 private:
  int rank_;
  int failures_ = 0;
};

}  // namespace gradshare::mpi_testing
