// averaging/parameter_averaging.h: synchronous parameter averaging (Deeplearning4j's first
// implementation), averaged with collectives of the workers' group (comm/worker_group.h) instead of through a driver.
//
// Protocol (rank 0 = master, ranks 1..W = workers; the workers share a communicator of their own;
// control messages: averaging/protocol.h):
//
//  worker (index i of W)                               master
//  ------                                              ------
//                                               <--  Start {iteration, StartState}: where
//                                                    to start (0, or a resumed checkpoint's) and
//                                                    from what (parameters, this worker's
//                                                    updater state)
//  step s of epoch e: minibatch s*W + i of the epoch's
//    plan (every rank builds the same plan; a resumed
//    epoch starts at its first untrained minibatch),
//    gradient -> own updater -> own parameters
//  every training.averaging_frequency steps and after
//    the epoch's last step, a round: all-reduce (SUM)
//    of [parameters | updater state (save_updater)],
//    divided by W: every worker continues from the
//    same bits (training.verify_averaging: a
//    fingerprint all-reduce checks exactly that);
//    then all-reduce (MAX) of the votes: stop (a
//    signal here, or the master's StateRequest) and
//    checkpoint (worker 0's Checkpointer: every_steps
//    in minibatches, every_seconds, every_epoch)
//  on either vote: AveragingSnapshot {stop, iteration,
//    parameters (worker 0), updater state} from
//    worker 0, or from every worker when the updater
//    state is not averaged                       -->  writes the checkpoint once all are in
//                                               <--  StateRequest when a signal arrives here
//  AveragingReport {deltas} every
//    logging.every_steps trained steps           -->  aggregates, prints the progress line
//  worker 0 after an epoch's last round:
//    EpochModel {epoch, step, minibatches,
//    parameters}                                 -->  evaluates the averaged model
//  AveragingDone {AveragingReport, AveragingTotals,
//    peak memory, the last epoch's minibatches,
//    parameters (worker 0; empty for the
//    others)}                                     -->  after every live worker's AveragingDone:
//  waits                                        <--  Shutdown {0, or 75 after a stop's
//  exits with that code                              checkpoint (see checkpointer.h)}; final
//                                                      evaluation, model.h5, summary record
//
// After a process failure under ULFM the group repairs and resumes from the newest round any
// member completed (group_recovery.h).
//
// Every worker takes the same number of steps per epoch (ceil(minibatches / W)); a worker whose
// minibatch index runs past the epoch's end idles that step, so the rounds always line up.
// A straggler holds up every round: that is the strategy's nature. Each worker measures the time
// it spent inside each round's all-reduce (the wait for the slowest worker plus the transfer)
// and the master reports its mean and maximum.
//
// Checkpoints are taken at rounds, where every worker holds the same parameters: the iteration
// is the number of minibatches trained by all workers together, so a resumed run with another
// number of workers continues at the same minibatch of the same epoch. The averaged updater
// state is the same everywhere (one state in the checkpoint); with save_updater false every
// worker's own is kept (/workers/<w>/optimizer) and a resumed worker w takes saved worker
// (w mod saved workers)'s.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/optimizer.h"
#include "runtime/run_context.h"

namespace gradshare::train {

int run_parameter_averaging(runtime::RunContext& context);

// Above this averaging_frequency the master warns (Deeplearning4j's docs: convergence suffers).
inline constexpr std::int64_t kAveragingFrequencyWarning = 20;

// What one averaging round moves: the parameters and, when an optimizer is given, each of its
// state buffers, gathered into one contiguous buffer so that a round is one all-reduce.
class AveragingBuffer {
 public:
  // The spans must stay valid for the buffer's life (they point into the model and optimizer).
  AveragingBuffer(std::span<float> parameters, nn::Optimizer* optimizer);

  // Copies the current state into the buffer and returns it (to be summed over the workers).
  std::span<float> gather();
  // Divides the summed buffer by `workers` and writes it back into parameters and state.
  void scatter_mean(int workers);
  std::span<const float> values() const { return buffer_; }
  // Bytes each worker contributes to (and receives from) one round.
  std::size_t bytes() const { return buffer_.size() * sizeof(float); }

 private:
  std::vector<std::span<float>> parts_;
  std::vector<float> buffer_;
};

// 64-bit FNV-1a over the bytes of `values`: two ranks' fingerprints agree only if their bits do
// (up to a 2^-64 collision chance).
std::uint64_t fingerprint(std::span<const float> values);

}  // namespace gradshare::train
