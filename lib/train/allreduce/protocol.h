// allreduce/protocol.h: the dense all-reduce reference's control messages. The workers share a
// communicator of their own and all-reduce every step; only worker 1 (index 0) talks to the
// master, which evaluates, checkpoints and writes the final model:
//
//  worker                                          master
//                                             <--  Start {step, StartState} (every worker)
//  every logging.every_steps steps (worker 1):
//    AllreduceProgress                        -->  progress line, metrics.jsonl
//  after an epoch (worker 1): EpochModel      -->  evaluation; Finish to worker 1 when early
//                                                  stopping says so
//  at a checkpoint (worker 1): AllreduceSnapshot -->  checkpoint
//  at the end or a stop (worker 1):
//    AllreduceFinal                           -->  model.h5 (not after a stop)
//  every other worker: PeakMemoryReport       -->  the peak memory summary
//  on a divergence (worker 1): Diverged       -->  the run ends (exit 3)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/messages.h"
#include "train/worker_state.h"

namespace gradshare::train {

struct AllreduceProgress {
  static constexpr comm::Tag kTag = comm::Tag::kAllreduceProgress;
  std::int64_t step = 0;
  double loss = 0;
  double accuracy = 0;
  double samples_per_second = 0;
  double learning_rate = 0;
  std::string line;  // the progress line, as the worker formats it
  void write(comm::ByteWriter& writer) const;
  static AllreduceProgress read(comm::ByteReader& reader);
};

// Worker 1's state for a checkpoint: the step, parameters and optimizer state.
struct AllreduceSnapshot {
  static constexpr comm::Tag kTag = comm::Tag::kAllreduceSnapshot;
  std::int64_t step = 0;
  std::vector<float> parameters;
  WorkerState state;
  void write(comm::ByteWriter& writer) const;
  static AllreduceSnapshot read(comm::ByteReader& reader);
};

struct AllreduceFinal {
  static constexpr comm::Tag kTag = comm::Tag::kAllreduceFinal;
  bool stopped = false;  // a stop signal ended training (its checkpoint came first)
  std::int64_t step = 0;
  std::vector<float> parameters;
  std::int64_t peak_bytes = 0;  // worker 1's peak resident memory
  void write(comm::ByteWriter& writer) const;
  static AllreduceFinal read(comm::ByteReader& reader);
};

}  // namespace gradshare::train
