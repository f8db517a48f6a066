#include "comm/mpi/train/startup_agreement.h"

#include <mpi.h>

#include <cstdio>

#include "comm/mpi/mpi_job.h"
#include "comm/mpi/train/job_failure.h"

namespace gradshare::cli {

void StartupAgreement::check(int rc) {
  if (rc == MPI_SUCCESS) return;
  if (repairs_) throw comm::LostBeforeTraining();
  end_job_lost_at_startup(context_, rc);
}

std::optional<int> StartupAgreement::settle(
    const std::optional<std::pair<int, std::string>>& failure) {
  int ok = failure ? 0 : 1;
  int all_ok = 0;
  check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm::mpi_comm(*context_.job)));
  if (all_ok == 1) return std::nullopt;
  int candidate = failure ? context_.rank : 1 << 30;
  int reporter = 0;
  check(MPI_Allreduce(&candidate, &reporter, 1, MPI_INT, MPI_MIN, comm::mpi_comm(*context_.job)));
  if (failure && context_.rank == reporter)
    std::fprintf(stderr, "gradshare: error: %s\n", failure->second.c_str());
  int code = failure ? failure->first : 0;
  int worst = 0;
  check(MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, comm::mpi_comm(*context_.job)));
  return worst;
}

std::string StartupAgreement::broadcast(std::string text) {
  const auto bytes = broadcast(std::vector<std::uint8_t>(text.begin(), text.end()));
  return {bytes.begin(), bytes.end()};
}

std::vector<std::uint8_t> StartupAgreement::broadcast(std::vector<std::uint8_t> bytes) {
  int length = static_cast<int>(bytes.size());
  check(MPI_Bcast(&length, 1, MPI_INT, 0, comm::mpi_comm(*context_.job)));
  bytes.resize(static_cast<std::size_t>(length));
  check(MPI_Bcast(bytes.data(), length, MPI_BYTE, 0, comm::mpi_comm(*context_.job)));
  return bytes;
}

}  // namespace gradshare::cli
