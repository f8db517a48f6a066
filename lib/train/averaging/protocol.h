// averaging/protocol.h: parameter averaging's control messages (the protocol is drawn in
// averaging/parameter_averaging.h). Workers average among themselves with collectives; the
// master hears reports, epoch models, checkpoint snapshots and each worker's end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "train/messages.h"
#include "train/step_counts.h"
#include "train/worker_state.h"

namespace gradshare::train {

// worker -> master every logging.every_steps steps: its figures since its previous report
// (summed by the master over all workers).
// Its steps are trained ones (idle steps excluded).
struct AveragingReport : StepCounts {
  static constexpr comm::Tag kTag = tags::kAveragingReport;
  std::int64_t rounds = 0;  // rounds this worker took part in
  std::int64_t bytes = 0;   // bytes it contributed to them
  double wait_sum = 0;      // seconds inside the rounds' all-reduce
  double wait_max = 0;
  double seconds = 0;  // the worker's wall time these figures cover

  void add(const AveragingReport& o);
};

// Whole-run figures every worker knows alike (rounds are collective).
struct AveragingTotals {
  std::int64_t rounds = 0;
  std::int64_t verified_rounds = 0;
  std::int64_t mismatched_rounds = 0;  // rounds after which the workers' bits differed
};

// worker -> master at a checkpoint: its part of it.
struct AveragingSnapshot {
  static constexpr comm::Tag kTag = tags::kAveragingSnapshot;
  bool stop = false;              // the workers stop after this round
  std::int64_t iteration = 0;     // minibatches of the run trained by all workers together
  std::vector<float> parameters;  // worker 0 only
  WorkerState state;
  static auto fields(auto& self) {
    return std::tie(self.stop, self.iteration, self.parameters, self.state);
  }
};

// worker -> master at its end: the last report, the run's totals, its peak memory, the last
// epoch's minibatches and (worker index 0 only; empty for the others) the final parameters.
struct AveragingDone {
  static constexpr comm::Tag kTag = tags::kAveragingDone;
  AveragingReport report;
  AveragingTotals totals;
  std::int64_t peak_bytes = 0;
  std::int64_t minibatches = 0;  // the group trained in the last epoch
  std::vector<float> parameters;
  static auto fields(auto& self) {
    return std::tie(self.report, self.totals, self.peak_bytes, self.minibatches, self.parameters);
  }
};

}  // namespace gradshare::train
