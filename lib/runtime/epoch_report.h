// epoch_report.h: what the master logs and records at the end of every epoch (validation and
// test accuracy, wall time since the start) and at the end of the run, and the early-stopping
// verdict (early_stopping.h) with best.h5 beside model.h5.
#pragma once

#include <cstdint>
#include <optional>

#include "core/timer.h"
#include "nn/model.h"
#include "runtime/early_stopping.h"
#include "report/metrics_log.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

class EpochReporter {
 public:
  explicit EpochReporter(RunContext& context);
  // Evaluates on the validation (if any) and test sets; logs and writes an "epoch" metrics line
  // (with "minibatches": those trained in the epoch, where the strategy counts them). With
  // early stopping: writes best.h5 on a new best, and an "early_stop" line once patience ran out.
  void end_of_epoch(nn::Model& model, std::int64_t epoch, std::int64_t step,
                    std::optional<std::int64_t> minibatches = std::nullopt);
  // A synchronous strategy's run resumed at `iteration` (`model` holds the checkpoint; epochs of
  // `batches` minibatches): when that is the end of an epoch other than the last (whose record
  // is the final one) and metrics.jsonl has no record of it (the master died between writing
  // the checkpoint and the epoch's evaluation), evaluates it now, as end_of_epoch, with every
  // minibatch of the epoch trained, so that no epoch goes unrecorded.
  void record_if_missing(nn::Model& model, std::int64_t iteration, std::int64_t batches);
  // True once early stopping ended the run: the strategy trains nothing more (the partitions or
  // rounds in flight finish) and ends as after its last epoch.
  bool stop_early() const { return stop_early_; }
  // Final test evaluation: logs it and writes a "final" metrics line (with "minibatches": those
  // trained in the last epoch, where the strategy counts them).
  void finish(nn::Model& model, std::optional<std::int64_t> minibatches = std::nullopt);
  // A new master (master_takeover.h): the run's wall time so far, which its records go on from,
  // and whether early stopping ended the training already.
  void continue_from(double seconds, bool stopped_early) {
    earlier_seconds_ = seconds;
    stop_early_ = stop_early_ || stopped_early;
  }

 private:
  // The figure early stopping watches, from this epoch's evaluations.
  double watched(double accuracy, double loss) const;
  // Passes the figure on; writes best.h5 on a new best; adds best_epoch to the epoch line.
  // Returns the "early_stop" record once patience ran out.
  std::optional<report::JsonLine> observe(nn::Model& model, std::int64_t epoch, std::int64_t step,
                                  double value, report::JsonLine& line);
  // A resumed run: the best so far from best.h5, evaluated again on the same split.
  void restore_best();

  // The run's wall time: this master's, after what earlier masters recorded.
  double wall_seconds() const { return earlier_seconds_ + clock_.seconds(); }

  RunContext& context_;
  core::Stopwatch clock_;
  double earlier_seconds_ = 0;
  EarlyStopping early_stopping_;
  bool best_restored_ = false;
  bool stop_early_ = false;
};

}  // namespace gradshare::runtime
