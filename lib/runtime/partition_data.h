// partition_data.h: a worker's side of the partitions it trains: the epoch plans they come from
// (built once per epoch, with the run's seed) and the read-ahead of partitioned reading: the
// partition it trains, then those reserved for its next requests (data.prefetch_partitions),
// each queued once, so the background reader goes from one partition into the next without a
// gap. With the training split in memory the read-ahead does nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <utility>

#include "config/experiment_config.h"
#include "data/dataset.h"
#include "data/epoch_plan.h"
#include "runtime/partition_scheduler.h"

namespace gradshare::runtime {

// The run's epoch plan without shuffling: how many minibatches and partitions an epoch has and
// their sizes (the same for every epoch and every seed).
data::EpochPlan epoch_shape(const config::ExperimentConfig& config, const data::Dataset& train);
std::int64_t minibatches_per_epoch(const config::ExperimentConfig& config,
                                   const data::Dataset& train);
// Steps per epoch where `workers` take one minibatch each per step (allreduce, parameter
// averaging): the epoch's minibatches over the workers, rounded up.
std::int64_t steps_per_epoch(const config::ExperimentConfig& config, const data::Dataset& train,
                             int workers);

class PartitionData {
 public:
  PartitionData(const data::Dataset& train, std::size_t batch_size, std::size_t partition_batches,
                std::uint64_t seed, bool shuffle);

  // Queues `grant`'s minibatches unless already queued, then those of `next`; drops the plans
  // of epochs before `grant`'s (they are done).
  void read_ahead(const PartitionGrant& grant, std::span<const PartitionGrant> next);
  // The plan of `epoch`, built on first use.
  const data::EpochPlan& plan(std::int64_t epoch);

 private:
  const data::Dataset& train_;
  std::size_t batch_size_;
  std::size_t partition_batches_;
  std::uint64_t seed_;
  bool shuffle_;
  std::map<std::int64_t, std::unique_ptr<data::EpochPlan>> plans_;
  std::set<std::pair<std::int64_t, std::int64_t>> queued_;  // (epoch, partition) in the reader
};

}  // namespace gradshare::runtime
