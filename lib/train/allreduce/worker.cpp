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
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "ft/fault_injection.h"
#include "train/group_recovery.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "report/progress.h"
#include "train/replica.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class AllreduceWorker {
 public:
  AllreduceWorker(RunContext& context, GroupSession& session, bool replacement)
      : context_(context),
        cfg_(context.config),
        session_(session),
        batches_(minibatches_per_epoch(cfg_, context.data.train)),
        // The schedule's clock: steps as an undisturbed run with the starting workers counts them.
        per_epoch_(steps_per_epoch(cfg_, context.data.train, context.worker_count())),
        total_steps_(per_epoch_ * cfg_.training.epochs),
        replica_(cfg_, total_steps_, per_epoch_, static_cast<std::uint64_t>(context.rank)),
        n_(replica_.parameter_count()),
        reduced_(n_ + kFlags),
        checkpointer_(context),
        divergence_(cfg_.training, cfg_.model.num_classes),
        injector_(cfg_.fault_tolerance, context.rank, replacement, context.end_rank_by_fault()),
        replacement_(replacement) {}

  int run() {
    return run_with_recovery(session_, replacement_, [this] { return train(); },
                             [this] { rejoin(); });
  }

 private:
  // After the gradient: samples, loss * samples, correct, minibatches trained, then the flags
  // every worker must agree on: stop (a signal arrived), checkpoint (time is due) and finish
  // (the master's Finish to worker index 0: early stopping ends training after this step).
  enum Slot { kSamples, kLoss, kCorrect, kTrained, kStop, kCheckpoint, kFinish, kFlags };

  comm::ControlChannel& control() { return session_.control(); }
  comm::WorkerGroup& workers() { return session_.workers(); }
  int index() { return workers().index(); }

  void start() {
    const auto start = receive<Start>(control(), 0, "initial model");
    apply_start_state(start.state, replica_.model(), replica_.optimizer());
    iteration_ = start.step;
    // Resumed at an epoch's end: the checkpoint trained all of that epoch (what the final record
    // reports when the run resumed at the very end).
    if (iteration_ > 0 && iteration_ % batches_ == 0) last_epoch_minibatches_ = batches_;
    const std::int64_t count = workers().size();
    step_ = iteration_ / batches_ * per_epoch_ + (iteration_ % batches_ + count - 1) / count;
    started_ = true;
    progress_.emplace(total_steps_, step_);
  }

  int train() {
    if (!started_) start();
    while (iteration_ < batches_ * cfg_.training.epochs) {
      if (!step()) return core::kExitDiverged;
      injector_.at_step(++steps_here_);
      const bool stop = reduced_[n_ + kStop] > 0;
      const bool finish = reduced_[n_ + kFinish] > 0 && !stop;
      if (index() == 0) report(finish);
      if (stop) return end(/*stopped=*/true);
      if (finish) break;
    }
    return end(/*stopped=*/false);
  }

  // One step of every worker; false when the loss diverged (then nothing is applied).
  bool step() {
    const std::int64_t epoch = iteration_ / batches_, done = iteration_ % batches_;
    const int count = workers().size();
    plan_epoch(epoch, done);
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
    if (iteration_ % batches_ == 0) {  // the epoch is complete
      last_epoch_minibatches_ = epoch_minibatches_;
      epoch_minibatches_ = 0;
    }
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

  // The plan of `epoch`, and this worker's minibatches from `done` on queued to read.
  void plan_epoch(std::int64_t epoch, std::int64_t done) {
    if (epoch == plan_epoch_) return;
    plan_.emplace(context_.data.train.size(), static_cast<std::size_t>(cfg_.training.batch_size),
                  cfg_.data.partition_batches, static_cast<std::uint64_t>(cfg_.run.seed), epoch,
                  cfg_.data.shuffle);
    plan_epoch_ = epoch;
    std::vector<std::vector<std::uint32_t>> mine;
    for (std::int64_t b = done + index(); b < batches_; b += workers().size()) {
      const auto indices = plan_->batch_indices(static_cast<std::size_t>(b));
      mine.emplace_back(indices.begin(), indices.end());
    }
    data::read_ahead(context_.data.train, std::move(mine));
  }

  // Worker index 0 after a step: progress, the epoch's model, a checkpoint when due.
  void report(bool finish) {
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
    if (finish) return;  // the final model follows
    if (iteration_ % batches_ == 0 && iteration_ < batches_ * cfg_.training.epochs)
      send_epoch_model();
    if (checkpoint_mark_ == step_) send_snapshot();
  }

  void send_epoch_model() {
    send(control(), 0,
         EpochModel{iteration_ / batches_, iteration_, last_epoch_minibatches_,
                    replica_.copy_parameters()});
  }

  void send_snapshot() {
    send(control(), 0,
         AllreduceSnapshot{step_, iteration_, replica_.copy_parameters(),
                           capture_worker_state(replica_.optimizer(), 0.0f)});
    checkpointer_.mark_written(step_);
  }

  // The end of training: worker index 0 sends the final model, every other worker its peak
  // memory; all wait for the master's word (a failure then is the master's to act on:
  // job_session.h).
  int end(bool stopped) {
    if (index() == 0)
      send(control(), 0,
           AllreduceFinal{stopped, iteration_, iteration_ % batches_ == 0 ? last_epoch_minibatches_
                                                                      : epoch_minibatches_,
                          replica_.copy_parameters(), core::peak_resident_bytes()});
    else
      send(control(), 0, PeakMemoryReport{core::peak_resident_bytes()});
    session_.hand_in_results();
    injector_.at_hand_in();
    return receive<Shutdown>(control(), 0, "the master's end of the run").exit_code;
  }

  // After a repair (or as a replacement): every worker takes the state of the most advanced,
  // then the master's GroupResume; worker index 0 sends what the master lacks.
  void rejoin() {
    injector_.at_recovery();
    plan_epoch_ = -1;  // the minibatches are split anew
    load_state(furthest_state(workers(), static_cast<std::uint64_t>(step_),
                              started_ ? save_state() : std::vector<std::uint8_t>{}));
    const auto resume = receive<GroupResume>(control(), 0, "the master's resume after a repair");
    stop_asked_ = stop_asked_ || resume.stop;
    finish_asked_ = finish_asked_ || resume.finish;
    if (index() != 0) return;
    const std::int64_t epochs = iteration_ / batches_;
    if (epochs > resume.epochs_evaluated && epochs < cfg_.training.epochs) send_epoch_model();
    if (checkpoint_mark_ > resume.checkpoint_mark) send_snapshot();
  }

  // {step, iteration, minibatches this epoch and last, checkpoint mark, finish: i64 x 5,
  //  parameters: f32[], worker state}
  std::vector<std::uint8_t> save_state() {
    comm::ByteWriter writer;
    writer.put(step_).put(iteration_).put(epoch_minibatches_).put(last_epoch_minibatches_);
    writer.put(checkpoint_mark_).put<std::int64_t>(finish_asked_);
    writer.put_vector(std::span<const float>(replica_.parameters()));
    capture_worker_state(replica_.optimizer(), 0.0f).write(writer);
    return writer.take();
  }

  void load_state(std::span<const std::uint8_t> bytes) {
    comm::ByteReader reader(bytes, "a worker's state after a repair");
    step_ = reader.get<std::int64_t>();
    iteration_ = reader.get<std::int64_t>();
    epoch_minibatches_ = reader.get<std::int64_t>();
    last_epoch_minibatches_ = reader.get<std::int64_t>();
    checkpoint_mark_ = reader.get<std::int64_t>();
    finish_asked_ = reader.get<std::int64_t>() != 0;
    StartState state{true, reader.get_vector<float>(), WorkerState::read(reader)};
    reader.expect_end();
    apply_start_state(state, replica_.model(), replica_.optimizer());
    if (checkpoint_mark_ >= 0) checkpointer_.mark_written(checkpoint_mark_);
    if (!progress_) progress_.emplace(total_steps_, step_);
    started_ = true;
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  GroupSession& session_;
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
  ft::FaultInjector injector_;  // fault_tolerance.inject
  std::int64_t steps_here_ = 0;  // training steps this process took (what injections count)
  bool replacement_;      // took a failed worker's place
  bool started_ = false;  // holds the run's state (from the master's Start or a resync)
  std::int64_t step_ = 0;       // the schedule's clock
  std::int64_t iteration_ = 0;  // minibatches of the run the group trained
  std::int64_t epoch_minibatches_ = 0;       // trained in the epoch under way
  std::int64_t last_epoch_minibatches_ = 0;  // trained in the epoch completed last
  std::int64_t checkpoint_mark_ = -1;        // the step of the newest checkpoint (-1: none)
  double learning_rate_ = 0;
  bool stop_asked_ = false;    // the master's GroupResume said stop
  bool finish_asked_ = false;  // early stopping: the master's Finish
};

}  // namespace

int run_allreduce_worker(RunContext& context, GroupSession& session, bool replacement) {
  return AllreduceWorker(context, session, replacement).run();
}

}  // namespace gradshare::train
