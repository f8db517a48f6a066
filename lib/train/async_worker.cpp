// async_worker.cpp: AsyncWorker (see async_worker.h).
#include "train/async_worker.h"

#include "core/log.h"
#include "runtime/partition_data.h"

namespace gradshare::train {

AsyncWorker::AsyncWorker(runtime::RunContext& context,
                         const config::ExperimentConfig& replica_config, nn::Model model,
                         bool replacement)
    : context_(context),
      cfg_(context.config),
      batches_per_epoch_(runtime::minibatches_per_epoch(cfg_, context.data.train)),
      replica_(replica_config, std::move(model), batches_per_epoch_ * cfg_.training.epochs,
               batches_per_epoch_, static_cast<std::uint64_t>(context.rank)),
      n_(replica_.parameter_count()),
      partitions_(context.data.train, static_cast<std::size_t>(cfg_.training.batch_size),
                  static_cast<std::size_t>(cfg_.data.partition_batches),
                  static_cast<std::uint64_t>(cfg_.run.seed), cfg_.data.shuffle),
      injector_(cfg_.fault_tolerance, context.rank, replacement, context.end_rank_by_fault()),
      divergence_(cfg_.training, cfg_.model.num_classes) {}

const data::EpochPlan& AsyncWorker::open_partition(const runtime::PartitionGrant& grant,
                                                   std::span<const runtime::PartitionGrant> next) {
  partitions_.read_ahead(grant, next);
  return partitions_.plan(grant.epoch);
}

std::optional<Diverged> AsyncWorker::check_divergence(std::int64_t step, double loss) {
  const auto reason = divergence_.check(step, loss);
  if (!reason) return std::nullopt;
  core::log_error("diverged: " + *reason);
  diverged_ = true;
  return Diverged{step, *reason};
}

}  // namespace gradshare::train
