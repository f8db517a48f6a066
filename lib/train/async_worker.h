// async_worker.h: what the workers of the asynchronous strategies (gradient sharing, Downpour)
// share: a replica trained on the partitions the master grants (partition_messages.h), each
// minibatch at its step of the run's schedule; the divergence guard on every step's loss, whose
// verdict ends this worker's training once; the partitions it knows done (what a new master
// rebuilds its schedule from); fault injection (fault_tolerance.inject). How a worker trains
// between its steps, shares its updates and recovers is its strategy's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "data/epoch_plan.h"
#include "ft/fault_injection.h"
#include "nn/model.h"
#include "runtime/divergence_guard.h"
#include "runtime/partition_data.h"
#include "runtime/run_context.h"
#include "train/messages.h"
#include "train/replica.h"

namespace gradshare::train {

class AsyncWorker {
 protected:
  // `replica_config`: the run's config as this strategy's workers train with it (momentum
  // compensation, local clipping); `model` the replica's. replacement: a process that takes a
  // failed worker's place.
  AsyncWorker(runtime::RunContext& context, const config::ExperimentConfig& replica_config,
              nn::Model model, bool replacement);

  // `grant`'s samples (and those of `next`, reserved for the following requests) queued for
  // reading ahead; the plan of its epoch.
  const data::EpochPlan& open_partition(const runtime::PartitionGrant& grant,
                                        std::span<const runtime::PartitionGrant> next);
  // The step of the run's schedule at minibatch `batch` of `grant`'s epoch.
  std::int64_t schedule_step(const runtime::PartitionGrant& grant, std::size_t batch) const {
    return grant.epoch * batches_per_epoch_ + static_cast<std::int64_t>(batch);
  }
  // The divergence guard on the loss of this worker's step `step`: when it fires, logged,
  // diverged_ set, and the report for the master returned (the caller sends it).
  std::optional<Diverged> check_divergence(std::int64_t step, double loss);

  runtime::RunContext& context_;
  const config::ExperimentConfig& cfg_;
  const std::int64_t batches_per_epoch_;
  Replica replica_;
  const std::size_t n_;  // parameters
  runtime::PartitionData partitions_;
  ft::FaultInjector injector_;  // fault_tolerance.inject; remembers its first recovery
  // Every partition this worker knows done: those it finished, and as a replacement those done
  // when it started (what a new master rebuilds its schedule from: sharing/takeover.h,
  // downpour/takeover.h).
  std::vector<runtime::PartitionGrant> done_partitions_;
  bool diverged_ = false;  // no more steps: the master ends the run and saves nothing

 private:
  runtime::DivergenceGuard divergence_;
};

}  // namespace gradshare::train
