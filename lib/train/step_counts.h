// step_counts.h: what a training step yields (StepResult), and what every strategy's worker
// report counts of its steps (StepCounts), summed by the master over reports and workers.
// Reports derive from StepCounts and stay trivially copyable: they travel as their bytes.
#pragma once

#include <cstdint>

namespace gradshare::train {

struct StepResult {
  double loss = 0;  // mean over the minibatch
  std::int64_t correct = 0;
  std::int64_t samples = 0;
};

struct StepCounts {
  std::int64_t steps = 0;
  std::int64_t samples = 0;
  double loss_sum = 0;  // sum of per-step mean losses
  std::int64_t correct = 0;

  void count(const StepResult& step) {
    ++steps;
    samples += step.samples;
    loss_sum += step.loss;
    correct += step.correct;
  }
  void add(const StepCounts& o) {
    steps += o.steps;
    samples += o.samples;
    loss_sum += o.loss_sum;
    correct += o.correct;
  }
};

// Adds each listed member of `from` to the same member of `to` (pointers to members of the
// report: a report's sums in one line).
template <typename Report, typename... Members>
void add_members(Report& to, const Report& from, Members... members) {
  ((to.*members += from.*members), ...);
}

}  // namespace gradshare::train
