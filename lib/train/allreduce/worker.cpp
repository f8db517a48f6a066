// allreduce/worker.cpp: an all-reduce worker: each step the group trains the next minibatches of
// the epoch's plan, one per worker (worker i of W takes minibatches c + i of the epoch, where c
// is how many the group trained before this step), each gradient weighted by its samples and
// all-reduced with the loss, the counts and three flags every worker must agree on; then every
// worker applies the same update. Worker index 0 reports to the master. After a process failure
// the group repairs and resumes from its most advanced member (group_recovery.h): a step the
// failure interrupted is trained again, by the workers that are left.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/stop_signal.h"
#include "data/epoch_plan.h"
#include "kernels/cpu/elementwise.h"
#include "train/allreduce/protocol.h"
#include "train/allreduce/roles.h"
#include "report/progress.h"
#include "train/synchronous_worker.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class AllreduceWorker : public SynchronousWorker {
 public:
  AllreduceWorker(runtime::RunContext& context, GroupSession& session, bool replacement)
      : SynchronousWorker(context, session, replacement),
        n_(replica_.parameter_count()),
        reduced_(n_ + kFlags) {}

 private:
  // After the gradient: samples, loss * samples, correct, minibatches trained, then the flags
  // every worker must agree on: stop (a signal arrived), checkpoint (time is due) and finish
  // (the master's Finish to worker index 0: early stopping ends training after this step).
  enum Slot { kSamples, kLoss, kCorrect, kTrained, kStop, kCheckpoint, kFinish, kFlags };

  int index() { return workers().index(); }

  void on_started() override { progress_.emplace(total_steps_, step_); }

  int train() override {
    while (iteration_ < batches_ * cfg_.training.epochs) {
      if (!step()) return core::kExitDiverged;
      injector_.at_step(++steps_here_);
      const bool stop = reduced_[n_ + kStop] > 0;
      const bool finish = reduced_[n_ + kFinish] > 0 && !stop;
      if (index() == 0) report();
      if (stop) return end(/*stopped=*/true);
      if (finish) break;  // the final model follows
      if (iteration_ % batches_ == 0 && iteration_ < batches_ * cfg_.training.epochs)
        send_epoch_model();
      if (index() == 0 && checkpoint_mark_ == step_) send_snapshot();
    }
    return end(/*stopped=*/false);
  }

  // One step of every worker; false when the loss diverged (then nothing is applied).
  bool step() {
    const std::int64_t epoch = iteration_ / batches_, done = iteration_ % batches_;
    const int count = workers().size();
    if (epoch != plan_epoch_) {  // the minibatches are split anew
      plan_.emplace(plan_of(epoch));
      plan_epoch_ = epoch;
      read_ahead_mine(*plan_, done);
    }
    std::fill(reduced_.begin(), reduced_.end(), 0.0f);
    if (const std::int64_t b = done + index(); b < batches_) {
      const auto result =
          replica_.gradient(context_.data.train, plan_->batch_indices(static_cast<std::size_t>(b)));
      const auto samples = static_cast<float>(result.samples);
      kernels::cpu::scale(samples, replica_.model().gradients().data(), reduced_.data(), n_);
      reduced_[n_ + kSamples] = samples;
      reduced_[n_ + kLoss] = static_cast<float>(result.loss) * samples;
      reduced_[n_ + kCorrect] = static_cast<float>(result.correct);
      reduced_[n_ + kTrained] = 1.0f;
    }
    reduced_[n_ + kStop] = stop_asked_ || core::stop_requested() ? 1.0f : 0.0f;
    reduced_[n_ + kCheckpoint] = index() == 0 && checkpointer_.due(step_) ? 1.0f : 0.0f;
    finish_asked_ = finish_asked_ || (index() == 0 && try_receive<Finish>(control(), 0).has_value());
    reduced_[n_ + kFinish] = finish_asked_ ? 1.0f : 0.0f;
    workers().allreduce_sum(reduced_);
    const float total = reduced_[n_ + kSamples];
    // The all-reduced loss is the same on every worker: all stop together, before the update.
    if (auto reason = divergence_.check(step_ + 1, reduced_[n_ + kLoss] / total)) {
      if (index() == 0) send(control(), 0, Diverged{step_ + 1, *reason});
      return false;
    }
    kernels::cpu::divide(reduced_.data(), total, n_);
    learning_rate_ = replica_.compute_update(step_, std::span<const float>(reduced_.data(), n_));
    replica_.apply_update();
    ++step_;
    iteration_ = epoch * batches_ + std::min<std::int64_t>(done + count, batches_);
    epoch_minibatches_ += static_cast<std::int64_t>(reduced_[n_ + kTrained]);
    if (iteration_ % batches_ == 0) end_epoch_count();  // the epoch is complete
    // Every worker knows when a checkpoint is taken, so a survivor can send it again.
    // Not at the end of training (model.h5 follows) unless every epoch's end is asked for.
    const bool unfinished = iteration_ < batches_ * cfg_.training.epochs;
    const bool ending = reduced_[n_ + kFinish] > 0 && reduced_[n_ + kStop] == 0;
    if (!ending && ((unfinished && (reduced_[n_ + kCheckpoint] > 0 || reduced_[n_ + kStop] > 0)) ||
                    (iteration_ % batches_ == 0 && checkpointer_.at_epoch_end())))
      checkpoint_mark_ = step_;
    progress_->record(reduced_[n_ + kLoss] / total,
                      static_cast<std::int64_t>(reduced_[n_ + kCorrect]),
                      static_cast<std::int64_t>(total));
    return true;
  }

  // Worker index 0 after a step: its progress (the epoch's model and a checkpoint follow).
  void report() {
    const std::int64_t epoch = (iteration_ - 1) / batches_;
    if (step_ % cfg_.logging.every_steps == 0) {
      char extra[96];
      std::snprintf(extra, sizeof extra, "  %.0f B/worker/step (dense all-reduce)",
                    4.0 * static_cast<double>(n_));
      const std::int64_t in_epoch = (step_ - 1) % per_epoch_ + 1;
      send(control(), 0,
           AllreduceProgress{iteration_, progress_->mean_loss(), progress_->accuracy(),
                             progress_->samples_per_second(), learning_rate_,
                             progress_->report(epoch + 1, cfg_.training.epochs, in_epoch,
                                               per_epoch_, step_, learning_rate_) +
                                 extra});
    }
  }

  void send_snapshot() {
    send(control(), 0,
         AllreduceSnapshot{step_, iteration_, replica_.copy_parameters(),
                           capture_worker_state(replica_.optimizer(), 0.0f)});
    checkpointer_.mark_written(step_);
  }

  // The end of training: worker index 0 sends the final model, every other worker its peak
  // memory; all wait for the master's word.
  int end(bool stopped) {
    if (index() == 0)
      send(control(), 0,
           AllreduceFinal{stopped, iteration_, iteration_ % batches_ == 0 ? last_epoch_minibatches_
                                                                      : epoch_minibatches_,
                          replica_.copy_parameters(), core::peak_resident_bytes()});
    else
      send(control(), 0, PeakMemoryReport{core::peak_resident_bytes()});
    return hand_in_and_wait();
  }

  // A recovery resumes from the member that took the most steps.
  std::uint64_t progress() const override { return static_cast<std::uint64_t>(step_); }

  void on_state_loaded() override {
    plan_epoch_ = -1;  // the minibatches are split anew
    if (checkpoint_mark_ >= 0) checkpointer_.mark_written(checkpoint_mark_);
    if (!progress_) progress_.emplace(total_steps_, step_);
  }

  // Worker index 0 sends what the master lacks.
  void send_what_master_lacks(const GroupResume& resume) override {
    if (index() != 0) return;
    const std::int64_t epochs = iteration_ / batches_;
    const std::int64_t resent = resend_kept_epoch_model(resume);
    // Without a kept one of this epoch (a replacement): the model as it stands now.
    if (epochs > std::max(resume.epochs_evaluated, resent) && epochs < cfg_.training.epochs)
      send_epoch_model();
    if (checkpoint_mark_ > resume.checkpoint_mark) send_snapshot();
  }

  std::size_t n_;
  std::vector<float> reduced_;  // the gradient, then the slots above
  std::optional<report::ProgressMeter> progress_;
  std::optional<data::EpochPlan> plan_;
  std::int64_t plan_epoch_ = -1;
  double learning_rate_ = 0;
};

}  // namespace

int run_allreduce_worker(runtime::RunContext& context, GroupSession& session, bool replacement) {
  return AllreduceWorker(context, session, replacement).run();
}

}  // namespace gradshare::train
