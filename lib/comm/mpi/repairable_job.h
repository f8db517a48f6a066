// repairable_job.h: the communicators of an MPI job whose failed processes can be repaired
// (comm/repair.h), as every strategy that repairs in-job holds them: the universe (spares
// included), the job's live processes in logical order, and the spares still waiting; the
// repair itself and a spare's wait. What runs on top (a tree and data planes, or a workers'
// group) is rebuilt by its owner after each repair.
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/mpi/repair.h"

namespace gradshare::comm {

class RepairableJob {
 public:
  // Collective over `world`: its last `spares` ranks wait as spares, the others form the job
  // (logical rank = world rank).
  RepairableJob(MPI_Comm world, int spares);
  // A process spawned to replace a dead one: the job it joined (its communicators move here).
  explicit RepairableJob(RepairedJob& joined);

  bool is_spare() const { return !job_; }
  MPI_Comm job() const { return job_.get(); }
  MPI_Comm universe() const { return universe_.get(); }
  // Logical rank of each rank of job(); -1 on a spare.
  const std::vector<int>& logical() const { return logical_; }
  int my_logical() const { return my_logical_; }
  // Logical ranks of the live workers (every job process but the master), ascending.
  std::vector<int> live_workers() const;

  // After a process failure, collective over every live process, spares included (the caller
  // first revokes what it built on the old job, so peers blocked there return). The job then
  // has its new communicators; the outcome's lost and replaced are sorted.
  RepairedJob repair(const RepairOptions& options);
  // A spare: waits for a repair and takes part in it (with `options`); true once this process
  // holds a logical rank, false when the master released the spares.
  bool wait_for_assignment(const RepairOptions& options, RepairedJob* outcome);
  // The master at the end of the run: spares never called may exit.
  void release_spares();

 private:
  void adopt(RepairedJob& repaired);

  Communicator universe_;
  Communicator job_;
  std::vector<int> logical_;
  std::vector<int> spares_;  // universe ranks
  int my_logical_ = -1;
};

}  // namespace gradshare::comm
