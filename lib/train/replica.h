// replica.h: one model replica's training step, the same in every strategy: the model built
// from the run's seed (every replica starts from the same parameters), its optimizer, the
// learning-rate schedule over the run, this rank's dropout stream and the minibatch buffers.
// A step is gradient() (forward and backward on a minibatch), then what the strategy does with
// it: compute_update() and apply_update() on this replica (local, parameter averaging,
// Downpour; gradient sharing encodes the update too), or an all-reduce of the gradient first
// (allreduce: compute_update(step, reduced)).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/step_counts.h"

namespace gradshare::train {

// The config of a worker whose update is one of `workers` that add up (gradient sharing, and
// Downpour with pushes summed: push_combine): it clips its own gradient at
// optimizer.clip_norm / sqrt(workers), so that their sum stays near clip_norm (local gradient
// clipping, Deep Gradient Compression).
config::ExperimentConfig one_of_summed_workers(const config::ExperimentConfig& config, int workers);

// The config of one of `workers` asynchronous workers (gradient sharing, Downpour) under
// momentum compensation (encoding.momentum, downpour.momentum: compensate): the optimizer's
// momentum lowered by the momentum that many asynchronous workers imply, 1 - 1/workers
// (Mitliagkas et al., "Asynchrony begets momentum", 2016), to no less than 0: Adam's and AdamW's
// beta1; SGD's momentum (momentum, nesterov) with the learning rate raised so that
// learning_rate / (1 - momentum), the step over many steps, stays as set (lowered alone, it
// shrank the step: Nesterov lost 1.4 pp).
config::ExperimentConfig with_compensated_momentum(const config::ExperimentConfig& config,
                                                   int workers);
// "<who> step with beta1 0.15, lowered from 0.9 by the momentum 4 asynchronous workers imply
// (<key>: compensate)", or the momentum and learning rate of SGD; empty when
// with_compensated_momentum changes nothing.
std::string compensated_momentum_line(const config::ExperimentConfig& config, int workers,
                                      const std::string& who, const std::string& key);

class Replica {
 public:
  // The schedule spans total_steps of steps_per_epoch each. dropout_substream: the rank (0 in a
  // one-process run), so that replicas draw different dropout masks.
  Replica(const config::ExperimentConfig& config, std::int64_t total_steps,
          std::int64_t steps_per_epoch, std::uint64_t dropout_substream);
  // The same around a model already built (and given its start parameters).
  Replica(const config::ExperimentConfig& config, nn::Model model, std::int64_t total_steps,
          std::int64_t steps_per_epoch, std::uint64_t dropout_substream);

  nn::Model& model() { return model_; }
  nn::Optimizer& optimizer() { return *optimizer_; }
  core::Rng& dropout_rng() { return dropout_rng_; }
  std::span<float> parameters() { return model_.parameters(); }
  std::size_t parameter_count() const { return model_.parameter_count(); }
  // The parameters as a vector of their own (what a message to the master carries).
  std::vector<float> copy_parameters() const {
    return {model_.parameters().begin(), model_.parameters().end()};
  }
  double learning_rate(std::int64_t step) const { return schedule_.at(step); }

  // Forward and backward on the samples `indices` of `dataset`: model().gradients() holds the
  // minibatch's mean gradient.
  StepResult gradient(const data::Dataset& dataset, std::span<const std::uint32_t> indices);
  // The same on samples already gathered: inputs [samples][sample size], labels [samples].
  StepResult gradient(const float* inputs, const std::int32_t* labels, std::size_t samples);
  // gradient() at parameters() - offset, leaving parameters() as they were, bit for bit:
  // gradient sharing's local view, the shared model less the worker's own update not yet sent
  // (its residual; quanta are subtracted from parameters, see codec/message.h).
  StepResult gradient_at_offset(std::span<const float> offset, const data::Dataset& dataset,
                                std::span<const std::uint32_t> indices);
  // The optimizer's update at schedule step `step` for `gradient` (model().gradients() when
  // empty), clipped to optimizer.clip_norm first, into update(); returns the learning rate it
  // used.
  double compute_update(std::int64_t step, std::span<const float> gradient = {});
  std::span<const float> update() const { return update_; }
  std::span<float> update() { return update_; }
  // Subtracts update() from the parameters (nn::apply_update).
  void apply_update();
  // For the end-of-run line: ", gradient clipped to norm C in K of N steps"; empty when off.
  std::string clipping_summary() const;

 private:
  // compute.device's backend (runtime/training_compute.h), null for the CPU; declared before the
  // model, whose buffers live in its memory, so it is destroyed after them.
  std::unique_ptr<nn::Compute> compute_;
  nn::Model model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  nn::LearningRateSchedule schedule_;
  core::Rng dropout_rng_;
  std::vector<float> inputs_;
  std::vector<std::int32_t> labels_;
  std::vector<float> update_;
  double clip_norm_;                     // optimizer.clip_norm; 0: no clipping
  std::vector<float> clipped_;           // the clipped gradient (allocated on first use)
  std::int64_t clipped_steps_ = 0;       // steps clipping scaled down
  std::int64_t updates_ = 0;             // compute_update calls
  std::vector<float> view_;  // gradient_at_offset's parameters, swapped into the model
};

}  // namespace gradshare::train
