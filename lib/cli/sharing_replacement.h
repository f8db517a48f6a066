// cli/sharing_replacement.h: a process MPI_Comm_spawn started to replace a failed
// gradient-sharing worker (fault tolerance, comm/repair.h).
#pragma once

#include "comm/repair.h"
#include "train/run_context.h"

namespace gradshare::cli {

// Given the job it joined (collective with the survivors' repair): takes its place in `context`
// (rank, size, run directory), loads the data and trains as that worker from the master's
// resync on; returns the exit code.
int run_sharing_replacement(train::RunContext& context, comm::RepairedJob joined);

}  // namespace gradshare::cli
