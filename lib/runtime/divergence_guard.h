// divergence_guard.h: notices a worker's training loss exploding. The loss is smoothed (an
// exponential moving average over about 10 steps, so one hard minibatch is no alarm); the run
// has diverged when a step's loss is NaN or Inf, or when the smoothed loss exceeds
// training.divergence_factor times its running minimum. The running minimum is never taken
// below 1 % of ln(num_classes) (a loss that small is a converged model: its relative wiggles are
// no explosion), nor above ln(num_classes), the cross-entropy of guessing every class alike, which a fresh model
// starts near: so the check holds from the first step (no warm-up), and an asynchronous worker
// whose first minibatch already meets a model the other workers' updates blew up does not
// measure the explosion against itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/experiment_config.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

class DivergenceGuard {
 public:
  DivergenceGuard(const config::TrainingConfig& training, std::int64_t num_classes);
  // The step's mean minibatch loss; a one-line reason once the run has diverged.
  std::optional<std::string> check(std::int64_t step, double loss);

 private:
  double factor_;
  double chance_loss_;  // ln(num_classes)
  double minimum_;      // of the smoothed loss, starting at chance_loss_
  double smoothed_ = 0;
  std::int64_t seen_ = 0;
};

// "optimizer.learning_rate 50 is too high"
std::string learning_rate_cause(const RunContext& context);

// The one error line of a run that diverged: "training diverged <where>; likely cause:
// <cause>; newest good checkpoint kept: ..." (or that none was written). An empty cause is
// learning_rate_cause(context); gradient sharing adds what it knows of staleness.
void log_divergence(const RunContext& context, const std::string& where,
                    const std::string& cause = "");

}  // namespace gradshare::runtime
