// worker_log.h: the log of a process that took a failed worker's place (a spare, or one spawned
// for it: comm/mpi/train/replacement.h), which from then on is that worker's.
#pragma once

#include "runtime/run_context.h"

namespace gradshare::runtime {

// Tags this process's log lines with its logical rank and writes them to rank-N.log.
void log_as_worker(RunContext& context);

}  // namespace gradshare::runtime
