// repairable_job.cpp: RepairableJob.
#include "comm/mpi/repairable_job.h"

#include <algorithm>

#include "comm/mpi/mpi_error.h"

namespace gradshare::comm {

RepairableJob::RepairableJob(MPI_Comm world, int spares)
    : universe_(Communicator::duplicate(world)) {
  const int size = universe_.size(), rank = universe_.rank();
  const int job_size = size - spares;
  const bool spare = rank >= job_size;
  MPI_Comm job = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(universe_.get(), spare ? MPI_UNDEFINED : 0, rank, &job),
            "MPI_Comm_split");
  job_ = Communicator(job);
  for (int r = job_size; r < size; ++r) spares_.push_back(r);
  if (spare) return;
  my_logical_ = rank;
  for (int r = 0; r < job_size; ++r) logical_.push_back(r);
}

RepairableJob::RepairableJob(RepairedJob& joined) { adopt(joined); }

std::vector<int> RepairableJob::live_workers() const {
  std::vector<int> workers;
  for (int logical : logical_)
    if (logical != 0) workers.push_back(logical);
  std::sort(workers.begin(), workers.end());
  return workers;
}

RepairedJob RepairableJob::repair(const RepairOptions& options) {
  auto repaired = repair_job(universe_.get(), my_logical_, logical_, options);
  adopt(repaired);
  return repaired;
}

bool RepairableJob::wait_for_assignment(const RepairOptions& options, RepairedJob* outcome) {
  while (wait_as_spare(universe_.get()) == SpareCall::kRepair) {
    auto repaired = repair(options);
    if (!is_spare()) {
      if (outcome) *outcome = std::move(repaired);
      return true;
    }
  }
  return false;
}

void RepairableJob::release_spares() {
  if (my_logical_ == 0 && !spares_.empty()) comm::release_spares(universe_.get(), spares_);
  spares_.clear();
}

void RepairableJob::adopt(RepairedJob& repaired) {
  universe_ = std::move(repaired.universe);
  job_ = std::move(repaired.job);
  logical_ = repaired.logical;
  spares_ = repaired.spares;
  my_logical_ = repaired.my_logical;
  std::sort(repaired.lost.begin(), repaired.lost.end());
  std::sort(repaired.replaced.begin(), repaired.replaced.end());
}

}  // namespace gradshare::comm
