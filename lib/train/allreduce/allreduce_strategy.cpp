// allreduce/allreduce_strategy.cpp: the strategy's entry (master and workers are in
// allreduce/master.cpp and allreduce/worker.cpp).
#include "train/allreduce/allreduce_strategy.h"

#include "comm/job.h"
#include "core/errors.h"
#include "train/allreduce/roles.h"

namespace gradshare::train {

int run_allreduce(RunContext& context) {
  auto& job = *context.job;
  const auto workers = job.worker_group();
  const auto control =
      job.control_channel(static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  context.phase = RunContext::kTraining;
  const int code = context.is_master() ? run_allreduce_master(context, *control)
                                       : run_allreduce_worker(context, *control, *workers);
  if (code == core::kExitRequeue) {
    // mpirun ends the whole job once one rank exits non-zero: nobody leaves before the master
    // has its checkpoint on disk (it returns only after writing it).
    control->flush();
    job.barrier();
  }
  return code;
}

}  // namespace gradshare::train
