// allreduce/protocol.h: the dense all-reduce reference's control messages. The workers share a
// group of their own and all-reduce every step; only worker index 0 reports to the master, which
// evaluates, checkpoints and writes the final model (after a repair, group_recovery.h, index 0
// may be another rank):
//
//  worker                                          master
//                                             <--  Start {step, StartState} (every worker)
//  every logging.every_steps steps (index 0):
//    AllreduceProgress                        -->  progress line, metrics.jsonl
//  after an epoch (index 0): EpochModel       -->  evaluation; Finish to index 0 when early
//                                                  stopping says so
//  at a checkpoint (index 0): AllreduceSnapshot -->  checkpoint
//  at the end or a stop (index 0):
//    AllreduceFinal                           -->  model.h5 (not after a stop)
//  every other worker: PeakMemoryReport       -->  the peak memory summary
//                                             <--  Shutdown {exit code} (every worker)
//  on a divergence (index 0): Diverged        -->  the run ends (exit 3)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/messages.h"
#include "train/worker_state.h"

namespace gradshare::train {

struct AllreduceProgress {
  static constexpr comm::Tag kTag = tags::kAllreduceProgress;
  std::int64_t step = 0;  // minibatches of the run trained (the records' unit, as elsewhere)
  double loss = 0;
  double accuracy = 0;
  double samples_per_second = 0;
  double learning_rate = 0;
  std::string line;  // the progress line, as the worker formats it
  static auto fields(auto& self) {
    return std::tie(self.step, self.loss, self.accuracy, self.samples_per_second,
                    self.learning_rate, self.line);
  }
};

// Worker index 0's state for a checkpoint: the step, the minibatches of the run trained,
// parameters and optimizer state.
struct AllreduceSnapshot {
  static constexpr comm::Tag kTag = tags::kAllreduceSnapshot;
  std::int64_t step = 0;
  std::int64_t iteration = 0;
  std::vector<float> parameters;
  WorkerState state;
  static auto fields(auto& self) {
    return std::tie(self.step, self.iteration, self.parameters, self.state);
  }
};

struct AllreduceFinal {
  static constexpr comm::Tag kTag = tags::kAllreduceFinal;
  bool stopped = false;  // a stop signal ended training (its checkpoint came first)
  std::int64_t iteration = 0;  // minibatches of the run trained
  std::int64_t minibatches = 0;  // trained in the last epoch (so far, after a stop)
  std::vector<float> parameters;
  std::int64_t peak_bytes = 0;  // worker index 0's peak resident memory
  static auto fields(auto& self) {
    return std::tie(self.stopped, self.iteration, self.minibatches, self.parameters,
                    self.peak_bytes);
  }
};

}  // namespace gradshare::train
