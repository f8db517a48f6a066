#include "runtime/partition_data.h"

namespace gradshare::runtime {

data::EpochPlan epoch_shape(const config::ExperimentConfig& config, const data::Dataset& train) {
  return data::EpochPlan(train.size(), static_cast<std::size_t>(config.training.batch_size),
                         static_cast<std::size_t>(config.data.partition_batches),
                         static_cast<std::uint64_t>(config.run.seed), 0, false);
}

std::int64_t minibatches_per_epoch(const config::ExperimentConfig& config,
                                   const data::Dataset& train) {
  return static_cast<std::int64_t>(epoch_shape(config, train).batch_count());
}

std::int64_t steps_per_epoch(const config::ExperimentConfig& config, const data::Dataset& train,
                             int workers) {
  return (minibatches_per_epoch(config, train) + workers - 1) / workers;
}

PartitionData::PartitionData(const data::Dataset& train, std::size_t batch_size,
                             std::size_t partition_batches, std::uint64_t seed, bool shuffle)
    : train_(train),
      batch_size_(batch_size),
      partition_batches_(partition_batches),
      seed_(seed),
      shuffle_(shuffle) {}

const data::EpochPlan& PartitionData::plan(std::int64_t epoch) {
  auto& plan = plans_[epoch];
  if (!plan)
    plan = std::make_unique<data::EpochPlan>(train_.size(), batch_size_, partition_batches_, seed_,
                                             epoch, shuffle_);
  return *plan;
}

void PartitionData::read_ahead(const PartitionGrant& grant, std::span<const PartitionGrant> next) {
  plans_.erase(plans_.begin(), plans_.lower_bound(grant.epoch));
  std::set<std::pair<std::int64_t, std::int64_t>> queued;
  const auto queue = [&](const PartitionGrant& g) {
    const std::pair key{g.epoch, g.partition};
    if (!queued_.count(key))
      data::read_ahead(train_,
                       plan(g.epoch).partition_indices(static_cast<std::size_t>(g.partition)));
    queued.insert(key);
  };
  queue(grant);
  for (const auto& g : next) queue(g);
  queued_ = std::move(queued);
}

}  // namespace gradshare::runtime
