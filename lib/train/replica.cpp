// replica.cpp: Replica.
#include "train/replica.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/model_file.h"

#include "core/errors.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/training_compute.h"

namespace gradshare::train {

config::ExperimentConfig one_of_summed_workers(const config::ExperimentConfig& config, int workers) {
  GS_CHECK(workers >= 1, "a worker as one of " + std::to_string(workers));
  auto local = config;
  local.optimizer.clip_norm /= std::sqrt(static_cast<double>(workers));
  return local;
}

config::ExperimentConfig with_compensated_momentum(const config::ExperimentConfig& config,
                                                   int workers) {
  GS_CHECK(workers >= 1, "momentum compensated for " + std::to_string(workers) + " workers");
  auto compensated = config;
  auto& optimizer = compensated.optimizer;
  const double implied = 1.0 - 1.0 / workers;
  const auto& type = config.optimizer.type;
  if (type == "adam" || type == "adamw") {
    optimizer.beta1 = std::max(0.0, config.optimizer.beta1 - implied);
  } else if (type == "momentum" || type == "nesterov") {
    optimizer.momentum = std::max(0.0, config.optimizer.momentum - implied);
    // A step over many steps is lr / (1 - momentum) times the gradient: kept as set.
    const double raised = (1.0 - optimizer.momentum) / (1.0 - config.optimizer.momentum);
    optimizer.learning_rate *= raised;
    optimizer.min_learning_rate *= raised;
  }
  return compensated;
}

std::string compensated_momentum_line(const config::ExperimentConfig& config, int workers,
                                      const std::string& who, const std::string& key) {
  const auto used = with_compensated_momentum(config, workers).optimizer;
  const auto& set = config.optimizer;
  char line[320];
  if (used.beta1 != set.beta1) {
    std::snprintf(line, sizeof line,
                  "%s step with beta1 %.3g, lowered from %.3g by the momentum %d asynchronous "
                  "workers imply (%s: compensate)",
                  who.c_str(), used.beta1, set.beta1, workers, key.c_str());
  } else if (used.momentum != set.momentum) {
    std::snprintf(line, sizeof line,
                  "%s step with momentum %.3g, lowered from %.3g by the momentum %d asynchronous "
                  "workers imply, and learning rate %.3g, raised from %.3g to keep "
                  "learning_rate / (1 - momentum) (%s: compensate)",
                  who.c_str(), used.momentum, set.momentum, workers, used.learning_rate,
                  set.learning_rate, key.c_str());
  } else {
    return "";
  }
  return line;
}

Replica::Replica(const config::ExperimentConfig& config, std::int64_t total_steps,
                 std::int64_t steps_per_epoch, std::uint64_t dropout_substream)
    : Replica(config, runtime::build_model(config), total_steps, steps_per_epoch,
              dropout_substream) {}

Replica::Replica(const config::ExperimentConfig& config, nn::Model model, std::int64_t total_steps,
                 std::int64_t steps_per_epoch, std::uint64_t dropout_substream)
    : compute_(runtime::make_training_compute(config)),
      model_(std::move(model)),
      optimizer_(nn::Optimizer::create(config.optimizer, model_.parameter_count())),
      schedule_(config.optimizer, total_steps, steps_per_epoch),
      dropout_rng_(core::Rng::derive(static_cast<std::uint64_t>(config.run.seed), /*stream=*/3,
                                     dropout_substream)),
      inputs_(static_cast<std::size_t>(config.training.batch_size) * model_.sample_size()),
      labels_(static_cast<std::size_t>(config.training.batch_size)),
      update_(model_.parameter_count()),
      clip_norm_(config.optimizer.clip_norm) {
  if (compute_) model_.compute_on(*compute_);
}

StepResult Replica::gradient(const data::Dataset& dataset, std::span<const std::uint32_t> indices) {
  GS_CHECK(indices.size() <= labels_.size(),
           "a minibatch of " + std::to_string(indices.size()) + " samples");
  data::gather_batch(dataset, indices, inputs_.data(), labels_.data());
  return gradient(inputs_.data(), labels_.data(), indices.size());
}

StepResult Replica::gradient(const float* inputs, const std::int32_t* labels, std::size_t samples) {
  const auto result = model_.train_batch(inputs, labels, samples, dropout_rng_);
  return {result.loss, result.correct, static_cast<std::int64_t>(samples)};
}

StepResult Replica::gradient_at_offset(std::span<const float> offset,
                                       const data::Dataset& dataset,
                                       std::span<const std::uint32_t> indices) {
  const auto parameters = model_.parameters();
  GS_CHECK(offset.size() == parameters.size(),
           "an offset of " + std::to_string(offset.size()) + " values");
  view_.resize(parameters.size());
  kernels::cpu::difference(parameters.data(), offset.data(), view_.data(), view_.size());
  // Swapped back on every path, a throw from a bad label included.
  struct SwapBack {
    nn::Model& model;
    std::vector<float>& view;
    ~SwapBack() { model.swap_parameters(view); }
  };
  model_.swap_parameters(view_);
  const SwapBack swap_back{model_, view_};
  return gradient(dataset, indices);
}

double Replica::compute_update(std::int64_t step, std::span<const float> gradient) {
  const double learning_rate = schedule_.at(step);
  std::span<const float> g = gradient.empty() ? model_.gradients() : gradient;
  ++updates_;
  if (clip_norm_ > 0.0) {
    const double norm = kernels::cpu::norm_stats(g.data(), g.size()).l2;
    if (norm > clip_norm_) {
      clipped_.resize(g.size());
      kernels::cpu::scale(static_cast<float>(clip_norm_ / norm), g.data(), clipped_.data(), g.size());
      g = clipped_;
      ++clipped_steps_;
    }
  }
  optimizer_->compute_update(g, model_.parameters(), update_, learning_rate);
  return learning_rate;
}

std::string Replica::clipping_summary() const {
  if (clip_norm_ <= 0.0) return "";
  std::ostringstream norm;
  norm << clip_norm_;
  return ", gradient clipped to norm " + norm.str() + " in " +
         std::to_string(clipped_steps_) + " of " + std::to_string(updates_) + " steps";
}


void Replica::apply_update() { nn::apply_update(model_.parameters(), update_); }

}  // namespace gradshare::train
