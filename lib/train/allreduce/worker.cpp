// allreduce/worker.cpp: an all-reduce worker: each step one minibatch of the epoch's plan
// (worker i of W takes minibatches i, i + W, ...), its gradient weighted by its samples and
// all-reduced with the loss, the counts and three flags every worker must agree on; then every
// worker applies the same update. Worker 1 (index 0) reports to the master.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "core/memory.h"
#include "core/stop_signal.h"
#include "data/epoch_plan.h"
#include "kernels/cpu/elementwise.h"
#include "train/allreduce/protocol.h"
#include "train/allreduce/roles.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "report/progress.h"
#include "train/replica.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class AllreduceWorker {
 public:
  AllreduceWorker(RunContext& context, comm::ControlChannel& control, comm::WorkerGroup& workers)
      : context_(context),
        cfg_(context.config),
        control_(control),
        workers_(workers),
        index_(workers.index()),
        count_(workers.size()),
        batches_(minibatches_per_epoch(cfg_, context.data.train)),
        per_epoch_(steps_per_epoch(cfg_, context.data.train, count_)),
        total_steps_(per_epoch_ * cfg_.training.epochs),
        replica_(cfg_, total_steps_, per_epoch_, static_cast<std::uint64_t>(context.rank)),
        n_(replica_.parameter_count()),
        reduced_(n_ + kFlags),
        checkpointer_(context),
        divergence_(cfg_.training) {
    const auto start = receive<Start>(control_, 0, "initial model");
    step_ = start.step;
    apply_start_state(start.state, replica_.model(), replica_.optimizer());
    progress_.emplace(total_steps_, step_);
  }

  int run() {
    while (step_ < total_steps_) {
      if (!step()) return core::kExitDiverged;
      const bool stop = reduced_[n_ + kStop] > 0;
      const bool finish = reduced_[n_ + kFinish] > 0 && !stop;
      if (index_ != 0) {
        if (stop) {
          send(control_, 0, PeakMemoryReport{core::peak_resident_bytes()});
          return core::kExitRequeue;
        }
        if (finish) break;
        continue;
      }
      report(stop, finish);
      if (stop) {
        send_final(true);
        return core::kExitRequeue;
      }
      if (finish) break;
    }
    // Worker 1's peak memory comes with the final model.
    if (index_ == 0)
      send_final(false);
    else
      send(control_, 0, PeakMemoryReport{core::peak_resident_bytes()});
    return core::kExitOk;
  }

 private:
  // After the gradient: samples, loss * samples, correct, then the flags every worker must
  // agree on: stop (a signal arrived), checkpoint (time is due) and finish (the master's Finish
  // to worker 1: early stopping ends training after this step).
  enum Slot { kSamples, kLoss, kCorrect, kStop, kCheckpoint, kFinish, kFlags };

  // One step of every worker; false when the loss diverged (then nothing is applied).
  bool step() {
    const std::int64_t s = step_ % per_epoch_;
    plan_epoch(step_ / per_epoch_, s);
    std::fill(reduced_.begin(), reduced_.end(), 0.0f);
    if (const std::int64_t b = s * count_ + index_; b < batches_) {
      const auto result =
          replica_.gradient(context_.data.train, plan_->batch_indices(static_cast<std::size_t>(b)));
      const auto samples = static_cast<float>(result.samples);
      kernels::cpu::scale(samples, replica_.model().gradients().data(), reduced_.data(), n_);
      reduced_[n_ + kSamples] = samples;
      reduced_[n_ + kLoss] = static_cast<float>(result.loss) * samples;
      reduced_[n_ + kCorrect] = static_cast<float>(result.correct);
    }
    reduced_[n_ + kStop] = core::stop_requested() ? 1.0f : 0.0f;
    reduced_[n_ + kCheckpoint] = index_ == 0 && checkpointer_.due(step_) ? 1.0f : 0.0f;
    finish_asked_ = finish_asked_ || (index_ == 0 && try_receive<Finish>(control_, 0).has_value());
    reduced_[n_ + kFinish] = finish_asked_ ? 1.0f : 0.0f;
    workers_.allreduce_sum(reduced_);
    const float total = reduced_[n_ + kSamples];
    // The all-reduced loss is the same on every worker: all stop together, before the update.
    if (auto reason = divergence_.check(step_ + 1, reduced_[n_ + kLoss] / total)) {
      if (index_ == 0) send(control_, 0, Diverged{step_ + 1, *reason});
      return false;
    }
    kernels::cpu::divide(reduced_.data(), total, n_);
    learning_rate_ = replica_.compute_update(step_, std::span<const float>(reduced_.data(), n_));
    replica_.apply_update();
    ++step_;
    progress_->record(reduced_[n_ + kLoss] / total,
                      static_cast<std::int64_t>(reduced_[n_ + kCorrect]),
                      static_cast<std::int64_t>(total));
    return true;
  }

  // The plan of `epoch`, and its minibatches for this worker from step s on queued to read.
  void plan_epoch(std::int64_t epoch, std::int64_t s) {
    if (epoch == plan_epoch_) return;
    plan_.emplace(context_.data.train.size(), static_cast<std::size_t>(cfg_.training.batch_size),
                  cfg_.data.partition_batches, static_cast<std::uint64_t>(cfg_.run.seed), epoch,
                  cfg_.data.shuffle);
    plan_epoch_ = epoch;
    std::vector<std::vector<std::uint32_t>> mine;
    for (std::int64_t b = s * count_ + index_; b < batches_; b += count_) {
      const auto indices = plan_->batch_indices(static_cast<std::size_t>(b));
      mine.emplace_back(indices.begin(), indices.end());
    }
    data::read_ahead(context_.data.train, std::move(mine));
  }

  // Worker 1 after a step: progress, the epoch's model, a checkpoint when due.
  void report(bool stop, bool finish) {
    const std::int64_t epoch = (step_ - 1) / per_epoch_;
    if (step_ % cfg_.logging.every_steps == 0) {
      char extra[96];
      std::snprintf(extra, sizeof extra, "  %.0f B/worker/step (dense all-reduce)",
                    4.0 * static_cast<double>(n_));
      send(control_, 0,
           AllreduceProgress{
               step_, progress_->mean_loss(), progress_->accuracy(),
               progress_->samples_per_second(), learning_rate_,
               progress_->report(epoch + 1, cfg_.training.epochs, (step_ - 1) % per_epoch_ + 1,
                                 per_epoch_, step_, learning_rate_) +
                   extra});
    }
    if (finish) return;  // the final model follows
    const bool epoch_end = step_ % per_epoch_ == 0;
    if (epoch_end && step_ < total_steps_)
      send(control_, 0, EpochModel{epoch + 1, step_, replica_.copy_parameters()});
    if (stop || reduced_[n_ + kCheckpoint] > 0 || (epoch_end && checkpointer_.at_epoch_end())) {
      send(
          control_, 0,
          AllreduceSnapshot{step_, replica_.copy_parameters(), capture_worker_state(replica_.optimizer(), 0.0f)});
      checkpointer_.mark_written(step_);
    }
  }

  void send_final(bool stopped) {
    send(control_, 0, AllreduceFinal{stopped, step_, replica_.copy_parameters(), core::peak_resident_bytes()});
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  comm::ControlChannel& control_;
  comm::WorkerGroup& workers_;
  int index_;
  int count_;
  std::int64_t batches_;
  std::int64_t per_epoch_;
  std::int64_t total_steps_;
  Replica replica_;
  std::size_t n_;
  std::vector<float> reduced_;  // the gradient, then the slots above
  Checkpointer checkpointer_;
  DivergenceGuard divergence_;
  std::optional<report::ProgressMeter> progress_;
  std::optional<data::EpochPlan> plan_;
  std::int64_t plan_epoch_ = -1;
  std::int64_t step_ = 0;
  double learning_rate_ = 0;
  bool finish_asked_ = false;
};

}  // namespace

int run_allreduce_worker(RunContext& context, comm::ControlChannel& control,
                         comm::WorkerGroup& workers) {
  return AllreduceWorker(context, control, workers).run();
}

}  // namespace gradshare::train
