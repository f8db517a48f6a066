// allreduce/master.cpp: the all-reduce master: starts the workers, then logs worker 1's
// progress, evaluates its epoch models, writes the checkpoints it sends and the final model.
#include <optional>
#include <set>
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
#include "train/master_loop.h"
#include "train/partition_data.h"
#include "train/model_file.h"
#include "train/peak_memory.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class AllreduceMaster : public MasterRole {
 public:
  AllreduceMaster(RunContext& context, comm::ControlChannel& control)
      : context_(context),
        control_(control),
        model_(nn::Model::build(context.config.model,
                                static_cast<std::uint64_t>(context.config.run.seed))),
        per_epoch_(steps_per_epoch(context.config, context.data.train, context.worker_count())),
        checkpointer_(context),
        reporter_(context) {
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
        take_parameters(epoch_model.parameters);
        const bool stopping_early = reporter_.stop_early();
        reporter_.end_of_epoch(model_, epoch_model.epoch, epoch_model.step);
        if (reporter_.stop_early() && !stopping_early) send(control_, 1, Finish{});
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
      case PeakMemoryReport::kTag:  // a worker other than worker 1 ended
        peak_memory_.add(message.source, decode<PeakMemoryReport>(message).bytes);
        return std::nullopt;
      case AllreduceFinal::kTag:
        final_ = decode<AllreduceFinal>(message);
        take_parameters(final_->parameters);
        peak_memory_.add(1, final_->peak_bytes);
        return std::nullopt;
      default:
        unexpected_message(message);
    }
  }

  // Worker 1's final model and every other worker's peak memory (they end at the same step).
  std::optional<int> finished() override {
    if (!final_ || peak_memory_.ranks() < context_.worker_count()) return std::nullopt;
    peak_memory_.summarize(context_);
    if (final_->stopped) return core::kExitRequeue;
    write_final_model(context_, model_, final_->step,
                      DataPosition{context_.config.training.epochs, {}}, reporter_);
    return core::kExitOk;
  }

  std::string awaited() const override { return "rank 1: allreduce progress from worker 1"; }

 private:
  void start_workers() {
    StartState start;
    std::int64_t first_step = 0;
    if (auto resume = Checkpointer::find_resume(context_)) {
      restore_checkpoint(*resume, "checkpoint", model_, nullptr);
      start.resume = true;
      start.parameters.assign(model_.parameters().begin(), model_.parameters().end());
      start.worker.optimizer_step = resume->optimizer_step;
      start.worker.optimizer_state = resume->optimizer_state;
      first_step = resume->iteration;
    }
    for (int w = 1; w <= context_.worker_count(); ++w) send(control_, w, Start{first_step, start});
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
    GS_CHECK(parameters.size() == model_.parameter_count(), "worker 1 sent a wrong-sized model");
    std::copy(parameters.begin(), parameters.end(), model_.parameters().begin());
  }

  // The step fixes the data position.
  void checkpoint(const AllreduceSnapshot& snapshot) {
    take_parameters(snapshot.parameters);
    auto c = make_checkpoint(context_, model_, nullptr, snapshot.step,
                             DataPosition{snapshot.step / per_epoch_, {}});
    c.optimizer_step = snapshot.state.optimizer_step;
    c.optimizer_state = snapshot.state.optimizer_state;
    checkpointer_.write(c);
  }

  RunContext& context_;
  comm::ControlChannel& control_;
  nn::Model model_;
  std::int64_t per_epoch_;
  Checkpointer checkpointer_;
  EpochReporter reporter_;
  PeakMemory peak_memory_;
  std::optional<AllreduceFinal> final_;
};

}  // namespace

int run_allreduce_master(RunContext& context, comm::ControlChannel& control) {
  AllreduceMaster master(context, control);
  return MasterLoop(control).run(master);
}

}  // namespace gradshare::train
