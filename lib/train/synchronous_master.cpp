// synchronous_master.cpp: SynchronousMaster (see synchronous_master.h).
#include "train/synchronous_master.h"

#include <algorithm>

#include "core/errors.h"
#include "train/master_takeover.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {
const char* const kAbortPlan = "the workers checkpoint and stop; exiting with the requeue code";
}  // namespace

SynchronousMaster::SynchronousMaster(runtime::RunContext& context, GroupSession& session)
    : MasterBase(context, session, runtime::build_model(context.config)),
      session_(session),
      batches_(runtime::minibatches_per_epoch(cfg_, context.data.train)),
      recovery_(context, session) {
  runtime::log_model(model_);
}

std::int64_t SynchronousMaster::start_workers(const std::string& strategy,
                                              bool per_worker_updater) {
  if (session_.last_repair().became_master) return take_over();
  const auto resume = runtime::Checkpointer::find_resume(context_);
  std::int64_t iteration = 0;
  if (resume) {
    iteration = runtime::resume_iteration(*resume, strategy, batches_, cfg_.training.epochs);
    runtime::restore_checkpoint(*resume, "checkpoint", model_, nullptr);
    runtime::note_resize(context_, *resume,
                         "epoch " + std::to_string(iteration / batches_ + 1) +
                             " continues at minibatch " + std::to_string(iteration % batches_) +
                             " of " + std::to_string(batches_) + ", split over " +
                             std::to_string(context_.worker_count()) + " workers" +
                             updater_note(*resume));
    epochs_evaluated_ = iteration / batches_;
    reporter_.record_if_missing(model_, iteration, batches_);
  }
  for (int w : session_.live_workers()) {
    StartState start = start_state(resume, static_cast<std::size_t>(w - 1));
    if (resume && !per_worker_updater) {
      start.worker.optimizer_step = resume->optimizer_step;
      start.worker.optimizer_state = resume->optimizer_state;
    }
    send(session_.control(), w, Start{iteration, start});
  }
  return iteration;
}

std::int64_t SynchronousMaster::take_over() {
  const auto so_far = read_run_so_far(context_);
  epochs_evaluated_ = so_far.epochs_evaluated;
  reporter_.continue_from(so_far.wall_seconds, so_far.stopped_early);
  // No checkpoint mark: the workers' newest state comes as a fresh checkpoint, so the run keeps
  // a checkpoint from after the loss however the lost master's last one ended.
  checkpoint_mark_ = -1;
  recovery_.resume_after_takeover(session_.last_repair(), stop_if_failure_aborts(kAbortPlan),
                                  so_far.stopped_early, epochs_evaluated_, checkpoint_mark_);
  load_evaluation_sets(context_);
  return epochs_evaluated_ * batches_;
}

void SynchronousMaster::evaluate_epoch(const EpochModel& epoch_model, int worker) {
  if (epoch_model.epoch <= epochs_evaluated_) return;  // sent again after a repair
  take_parameters(epoch_model.parameters, worker);
  const bool stopping_early = reporter_.stop_early();
  reporter_.end_of_epoch(model_, epoch_model.epoch, epoch_model.step, epoch_model.minibatches);
  epochs_evaluated_ = epoch_model.epoch;
  if (reporter_.stop_early() && !stopping_early) ask_to_finish(worker);
}

int SynchronousMaster::diverged(const Diverged& diverged, int worker) {
  note_divergence(worker, diverged);
  return core::kExitDiverged;
}

void SynchronousMaster::take_parameters(std::span<const float> parameters, int worker) {
  if (parameters.size() != model_.parameter_count())
    throw core::RuntimeError("worker rank " + std::to_string(worker) + " sent " +
                             std::to_string(parameters.size()) + " parameters, the model has " +
                             std::to_string(model_.parameter_count()));
  std::copy(parameters.begin(), parameters.end(), model_.parameters().begin());
}

bool SynchronousMaster::recover(const comm::TransportError& error) {
  if (!recovery_.repair(error)) return false;
  forget_in_flight();
  recovery_.resume(stop_if_failure_aborts(kAbortPlan), reporter_.stop_early(), epochs_evaluated_,
                   checkpoint_mark_);
  return true;
}

int SynchronousMaster::end_run(bool stopped, std::int64_t step, std::int64_t minibatches) {
  const int code = stopped ? core::kExitRequeue : core::kExitOk;
  // The results before the Shutdown: a master lost until then is replaced in-job
  // (master_takeover.h) by the workers, which still wait for it, and they hand in again.
  if (!stopped)
    write_final_model(context_, model_, step, runtime::DataPosition{cfg_.training.epochs, {}},
                      reporter_, minibatches);
  end_job(session_.live_workers(), code);
  peak_memory_.summarize(context_);
  recovery_.summarize();
  return code;
}

}  // namespace gradshare::train
