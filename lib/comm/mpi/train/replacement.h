// replacement.h: a process MPI_Comm_spawn started to replace a failed worker (fault
// tolerance without spares, comm/repair.h), for every strategy that repairs in-job.
#pragma once

#include "comm/mpi/repair.h"
#include "runtime/run_context.h"

namespace gradshare::cli {

// Given the job it joined (collective with the survivors' repair): takes its place in `context`
// (rank, size, run directory), loads the data and trains as that worker from the survivors'
// state on; returns the exit code.
int run_replacement_worker(runtime::RunContext& context, comm::RepairedJob joined);

}  // namespace gradshare::cli
