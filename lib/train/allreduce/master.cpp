// allreduce/master.cpp: the all-reduce master: starts the workers, then logs worker index 0's
// progress, evaluates its epoch models, writes the checkpoints it sends and the final model;
// after a process failure repairs the job and tells the workers where it stands
// (synchronous_master.h).
#include <optional>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "train/allreduce/protocol.h"
#include "train/allreduce/roles.h"
#include "runtime/model_file.h"
#include "train/synchronous_master.h"

namespace gradshare::train {

namespace {

class AllreduceMaster : public SynchronousMaster {
 public:
  AllreduceMaster(runtime::RunContext& context, GroupSession& session)
      : SynchronousMaster(context, session) {
    start_workers("allreduce", /*per_worker_updater=*/false);
  }

  // The workers see the signal themselves and stop together at their next step.
  void on_stop_signal() override {}

  std::optional<int> handle(const comm::ControlMessage& message) override {
    switch (message.tag) {
      case AllreduceProgress::kTag:
        log_progress(decode<AllreduceProgress>(message));
        return std::nullopt;
      case EpochModel::kTag:
        evaluate_epoch(decode<EpochModel>(message), message.source);
        return std::nullopt;
      case AllreduceSnapshot::kTag:  // a checkpoint is due
        checkpoint(decode<AllreduceSnapshot>(message), message.source);
        return std::nullopt;
      case Diverged::kTag:  // nothing more is saved
        return diverged(decode<Diverged>(message), message.source);
      case PeakMemoryReport::kTag:  // a worker other than index 0 ended
        peak_memory_.add(message.source, decode<PeakMemoryReport>(message).bytes);
        return std::nullopt;
      case AllreduceFinal::kTag:
        final_ = decode<AllreduceFinal>(message);
        take_parameters(final_->parameters, message.source);
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
    return end_run(final_->stopped, final_->iteration, final_->minibatches);
  }

  std::string awaited() const override {
    const auto live = session_.live_workers();
    return "rank " + std::to_string(live.empty() ? 1 : live.front()) +
           ": allreduce progress from worker index 0";
  }

 private:
  // What the workers send at the end comes again from the repaired group.
  void forget_in_flight() override {
    final_.reset();
    peak_memory_ = runtime::PeakMemory{};
  }

  // Only worker index 0 listens to the master between steps.
  void ask_to_finish(int reporter) override { send(session_.control(), reporter, Finish{}); }

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

  // The iteration (minibatches of the run trained) fixes the data position.
  void checkpoint(const AllreduceSnapshot& snapshot, int worker) {
    take_parameters(snapshot.parameters, worker);
    auto c = runtime::make_checkpoint(context_, model_, nullptr, snapshot.iteration,
                                      runtime::DataPosition{snapshot.iteration / batches_, {}});
    c.optimizer_step = snapshot.state.optimizer_step;
    c.optimizer_state = snapshot.state.optimizer_state;
    checkpointer_.write(c);
    checkpoint_mark_ = snapshot.step;
  }

  std::optional<AllreduceFinal> final_;
};

}  // namespace

int run_allreduce_master(runtime::RunContext& context, GroupSession& session) {
  return AllreduceMaster(context, session).run_loop();
}

}  // namespace gradshare::train
