// downpour/master_progress.h: the Downpour master's progress line and "step" records, and the
// staleness figures they carry.
#pragma once

#include <cstdint>

#include "train/downpour/protocol.h"
#include "runtime/progress_window.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// Staleness is undefined (null in metrics.jsonl) while no push has been acknowledged.
double mean_age(const DownpourReport& report);

// The master's periodic progress line and "step" metrics record.
class DownpourProgress {
 public:
  DownpourProgress(runtime::RunContext& context, std::int64_t steps_per_epoch, int workers,
                   std::int64_t first_step)
      : context_(context), window_(context, steps_per_epoch, workers, first_step) {}

  void add(const DownpourReport& report) { window_.add(report); }
  const DownpourReport& total() const { return window_.total(); }
  // Steps of the whole run, those before a resume included.
  std::int64_t step() const { return window_.step(); }

  // Logs the progress line and writes the "step" record when a window is due.
  void maybe_log();

 private:
  runtime::RunContext& context_;
  runtime::ProgressWindow<DownpourReport> window_;
};

}  // namespace gradshare::train
