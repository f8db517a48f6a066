// allreduce/master.cpp: the all-reduce master: starts the workers, then logs worker index 0's
// progress, evaluates its epoch models, writes the checkpoints it sends and the final model;
// after a process failure repairs the job and tells the workers where it stands
// (group_recovery.h).
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "nn/model.h"
#include "train/allreduce/protocol.h"
#include "train/allreduce/roles.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/epoch_report.h"
#include "train/group_recovery.h"
#include "train/master_loop.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "train/peak_memory.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class AllreduceMaster : public MasterRole {
 public:
  AllreduceMaster(RunContext& context, GroupSession& session)
      : context_(context),
        session_(session),
        model_(nn::Model::build(context.config.model,
                                static_cast<std::uint64_t>(context.config.run.seed))),
        batches_(minibatches_per_epoch(context.config, context.data.train)),
        checkpointer_(context),
        reporter_(context),
        recovery_(context, session) {
    core::log_info("model: " + std::to_string(model_.parameter_count()) + " parameters\n" +
                   model_.summary());
    start_workers();
  }

  // The workers see the signal themselves and stop together at their next step.
  void on_stop_signal() override {}

  std::optional<int> handle(const comm::ControlMessage& message) override {
    switch (message.tag) {
      case AllreduceProgress::kTag:
        log_progress(decode<AllreduceProgress>(message));
        return std::nullopt;
      case EpochModel::kTag: {
        const auto epoch_model = decode<EpochModel>(message);
        if (epoch_model.epoch <= epochs_evaluated_) return std::nullopt;  // sent again
        take_parameters(epoch_model.parameters);
        const bool stopping_early = reporter_.stop_early();
        reporter_.end_of_epoch(model_, epoch_model.epoch, epoch_model.step,
                               epoch_model.minibatches);
        epochs_evaluated_ = epoch_model.epoch;
        if (reporter_.stop_early() && !stopping_early)
          send(session_.control(), message.source, Finish{});
        return std::nullopt;
      }
      case AllreduceSnapshot::kTag:  // a checkpoint is due
        checkpoint(decode<AllreduceSnapshot>(message));
        return std::nullopt;
      case Diverged::kTag: {  // nothing more is saved
        const auto diverged = decode<Diverged>(message);
        log_divergence(context_,
                       "at step " + std::to_string(diverged.step) + ": " + diverged.reason);
        return core::kExitDiverged;
      }
      case PeakMemoryReport::kTag:  // a worker other than index 0 ended
        peak_memory_.add(message.source, decode<PeakMemoryReport>(message).bytes);
        return std::nullopt;
      case AllreduceFinal::kTag:
        final_ = decode<AllreduceFinal>(message);
        take_parameters(final_->parameters);
        peak_memory_.add(message.source, final_->peak_bytes);
        return std::nullopt;
      default:
        unexpected_message(message);
    }
  }

  // The final model and every other worker's peak memory (they end at the same step).
  std::optional<int> finished() override {
    const auto live = session_.live_workers();
    if (!final_ || peak_memory_.ranks() < static_cast<int>(live.size())) return std::nullopt;
    const int code = final_->stopped ? core::kExitRequeue : core::kExitOk;
    send_shutdown(session_.control(), live, code);
    session_.release_spares();
    peak_memory_.summarize(context_);
    recovery_.summarize();
    if (!final_->stopped)
      write_final_model(context_, model_, final_->iteration,
                        DataPosition{context_.config.training.epochs, {}}, reporter_,
                        final_->minibatches);
    return code;
  }

  bool recover(const comm::TransportError& error) override {
    if (!recovery_.repair(error)) return false;
    // What the workers send at the end comes again from the repaired group.
    final_.reset();
    peak_memory_ = PeakMemory{};
    recovery_.resume(reporter_.stop_early(), epochs_evaluated_, checkpoint_mark_);
    return true;
  }

  std::string awaited() const override {
    const auto live = session_.live_workers();
    return "rank " + std::to_string(live.empty() ? 1 : live.front()) +
           ": allreduce progress from worker index 0";
  }

 private:
  void start_workers() {
    StartState start;
    std::int64_t iteration = 0;
    if (auto resume = Checkpointer::find_resume(context_)) {
      iteration = resume_iteration(*resume, "allreduce", batches_, context_.config.training.epochs);
      restore_checkpoint(*resume, "checkpoint", model_, nullptr);
      start.resume = true;
      start.parameters.assign(model_.parameters().begin(), model_.parameters().end());
      start.worker.optimizer_step = resume->optimizer_step;
      start.worker.optimizer_state = resume->optimizer_state;
      note_resize(context_, *resume,
                  "epoch " + std::to_string(iteration / batches_ + 1) + " continues at minibatch " +
                      std::to_string(iteration % batches_) + " of " + std::to_string(batches_) +
                      ", split over " + std::to_string(context_.worker_count()) + " workers");
      epochs_evaluated_ = iteration / batches_;
      reporter_.record_if_missing(model_, iteration, batches_);
    }
    for (int w : session_.live_workers()) send(session_.control(), w, Start{iteration, start});
  }

  void log_progress(const AllreduceProgress& progress) {
    core::log_progress(progress.line);
    context_.metrics.write(
        report::JsonLine()
            .add("kind", "step")
            .add("step", progress.step)
            .add("loss", progress.loss)
            .add("train_accuracy", progress.accuracy)
            .add("samples_per_second", progress.samples_per_second)
            .add("learning_rate", progress.learning_rate)
            .add("bytes_per_worker_step", 4.0 * static_cast<double>(model_.parameter_count())));
  }

  void take_parameters(const std::vector<float>& parameters) {
    GS_CHECK(parameters.size() == model_.parameter_count(), "a worker sent a wrong-sized model");
    std::copy(parameters.begin(), parameters.end(), model_.parameters().begin());
  }

  // The iteration (minibatches of the run trained) fixes the data position.
  void checkpoint(const AllreduceSnapshot& snapshot) {
    take_parameters(snapshot.parameters);
    auto c = make_checkpoint(context_, model_, nullptr, snapshot.iteration,
                             DataPosition{snapshot.iteration / batches_, {}});
    c.optimizer_step = snapshot.state.optimizer_step;
    c.optimizer_state = snapshot.state.optimizer_state;
    checkpointer_.write(c);
    checkpoint_mark_ = snapshot.step;
  }

  RunContext& context_;
  GroupSession& session_;
  nn::Model model_;
  std::int64_t batches_;
  Checkpointer checkpointer_;
  EpochReporter reporter_;
  GroupRecovery recovery_;
  PeakMemory peak_memory_;
  std::optional<AllreduceFinal> final_;
  std::int64_t epochs_evaluated_ = 0;  // the newest epoch model evaluated
  std::int64_t checkpoint_mark_ = -1;  // the step of the newest checkpoint written
};

}  // namespace

int run_allreduce_master(RunContext& context, GroupSession& session) {
  AllreduceMaster master(context, session);
  return MasterLoop([&session]() -> comm::ControlChannel& { return session.control(); })
      .run(master);
}

}  // namespace gradshare::train
