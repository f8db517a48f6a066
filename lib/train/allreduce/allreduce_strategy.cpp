// allreduce/allreduce_strategy.cpp: the strategy's entry (master and workers are in
// allreduce/master.cpp and allreduce/worker.cpp).
#include "train/allreduce/allreduce_strategy.h"

#include "train/allreduce/roles.h"
#include "train/group_session.h"

namespace gradshare::train {

int run_allreduce(runtime::RunContext& context) {
  return run_group_strategy(context, run_allreduce_master, run_allreduce_worker);
}

}  // namespace gradshare::train
