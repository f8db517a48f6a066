// epoch_report.h: what the master logs and records at the end of every epoch (validation and
// test accuracy, wall time since the start) and at the end of the run.
#pragma once

#include <cstdint>
#include <optional>

#include "core/timer.h"
#include "nn/model.h"
#include "train/run_context.h"

namespace gradshare::train {

class EpochReporter {
 public:
  explicit EpochReporter(RunContext& context) : context_(context) {}
  // Evaluates on the validation (if any) and test sets; logs and writes an "epoch" metrics line
  // (with "minibatches": those trained in the epoch, where the strategy counts them).
  void end_of_epoch(nn::Model& model, std::int64_t epoch, std::int64_t step,
                    std::optional<std::int64_t> minibatches = std::nullopt);
  // Final test evaluation: logs it and writes a "final" metrics line.
  void finish(nn::Model& model);
  double last_test_accuracy() const { return last_test_accuracy_; }

 private:
  RunContext& context_;
  core::Stopwatch clock_;
  double last_test_accuracy_ = 0;
};

}  // namespace gradshare::train
