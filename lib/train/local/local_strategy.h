// local/local_strategy.h: training in one process, no communication (`training.strategy: local`,
// and every run started without mpirun). Walks each epoch's partitions in order.
#pragma once

#include "runtime/run_context.h"

namespace gradshare::train {

// Returns the process exit code.
int run_local(runtime::RunContext& context);

}  // namespace gradshare::train
