// averaging/master.cpp: the parameter-averaging master: starts the workers, assembles the
// checkpoints from their snapshots, evaluates the epoch models, sums the reports, and checks
// at the end that averaging left the workers bit-identical (training.verify_averaging); after
// a process failure repairs the job and tells the workers where it stands (group_recovery.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "report/progress.h"
#include "train/averaging/parameter_averaging.h"
#include "train/averaging/protocol.h"
#include "train/averaging/roles.h"
#include "runtime/model_file.h"
#include "runtime/progress_window.h"
#include "train/synchronous_master.h"

namespace gradshare::train {

namespace {

// The master's periodic progress line and "step" metrics record.
class AveragingProgress {
 public:
  AveragingProgress(runtime::RunContext& context, std::int64_t steps_per_epoch,
                    std::int64_t first_step)
      : context_(context), window_(context, steps_per_epoch, context.worker_count(), first_step) {}

  void add(const AveragingReport& report) { window_.add(report); }
  const AveragingReport& total() const { return window_.total(); }
  // Minibatches of the whole run, those before a resume included.
  std::int64_t step() const { return window_.step(); }

  void maybe_log() {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double bytes_per_step =
        runtime::ratio(static_cast<double>(w.bytes), static_cast<double>(w.steps));
    const double wait_mean = runtime::ratio(w.wait_sum, static_cast<double>(w.rounds));
    const std::int64_t rounds = window_.total().rounds / context_.worker_count();
    char line[384];
    std::snprintf(
        line, sizeof line,
        "%s  rounds %lld  allreduce wait mean %.2f ms max %.2f ms  %.0f B/worker/step  %s",
        window_.head().c_str(), static_cast<long long>(rounds), 1e3 * wait_mean, 1e3 * w.wait_max,
        bytes_per_step, window_.eta().c_str());
    core::log_progress(line);
    context_.metrics.write(window_.record()
                               .add("bytes_per_worker_step", bytes_per_step)
                               .add("rounds", rounds)
                               .add("wait_mean_seconds", wait_mean)
                               .add("wait_max_seconds", w.wait_max));
    window_.next_window();
  }

 private:
  runtime::RunContext& context_;
  runtime::ProgressWindow<AveragingReport> window_;
};

class AveragingMaster : public SynchronousMaster {
 public:
  AveragingMaster(runtime::RunContext& context, GroupSession& session)
      : SynchronousMaster(context, session),
        first_iteration_(
            (warn_if_rare(), start_workers("parameter_averaging", !cfg_.training.save_updater))),
        progress_(context, batches_, first_iteration_) {}

  void on_stop_signal() override {
    request_stop("stopping after the workers' next averaging round and a checkpoint");
    for (int w : session_.live_workers()) send(session_.control(), w, StateRequest{});
  }

  std::optional<int> handle(const comm::ControlMessage& message) override {
    switch (message.tag) {
      case AveragingReport::kTag:
        progress_.add(decode<AveragingReport>(message));
        progress_.maybe_log();
        return std::nullopt;
      case EpochModel::kTag:
        evaluate_epoch(decode<EpochModel>(message), message.source);
        return std::nullopt;
      case AveragingSnapshot::kTag: {
        auto snapshot = decode<AveragingSnapshot>(message);
        stopped_ = stopped_ || snapshot.stop;
        snapshots_[message.source] = std::move(snapshot);
        // Averaged updater state is the same on every worker: worker index 0's serves all.
        const auto per_checkpoint =
            cfg_.training.save_updater ? 1 : session_.live_workers().size();
        if (snapshots_.size() == per_checkpoint) write_checkpoint();
        return std::nullopt;
      }
      case Diverged::kTag:  // every worker ends; nothing more is saved
        return diverged(decode<Diverged>(message), message.source);
      case AveragingDone::kTag:
        worker_done(decode<AveragingDone>(message), message.source);
        return done_.size() == session_.live_workers().size() ? std::optional<int>(finish())
                                                              : std::nullopt;
      default:
        unexpected_message(message);
    }
  }

  std::string awaited() const override {
    return "the parameter-averaging workers (" + std::to_string(done_.size()) + " of " +
           std::to_string(session_.live_workers().size()) + " finished)";
  }

 private:
  void warn_if_rare() const {
    if (cfg_.training.averaging_frequency > kAveragingFrequencyWarning)
      core::log_warn("training.averaging_frequency " +
                     std::to_string(cfg_.training.averaging_frequency) + " is above " +
                     std::to_string(kAveragingFrequencyWarning) +
                     ": Deeplearning4j's documentation reports that convergence suffers when "
                     "parameters are averaged this rarely");
  }

  // How a resized resume gives the workers their updater state.
  std::string updater_note(const ckpt::Checkpoint& resume) const override {
    if (resume.worker_optimizers.empty())
      return "; every worker starts from the averaged updater state";
    return "; worker w starts from saved worker (w mod " +
           std::to_string(resume.worker_optimizers.size()) + ")'s updater state";
  }

  // The round in flight is done again: its snapshots and the workers' ends come again.
  void forget_in_flight() override {
    snapshots_.clear();
    done_.clear();
  }

  // Every worker listens to the master at its rounds.
  void ask_to_finish(int) override {
    for (int w : session_.live_workers()) send(session_.control(), w, Finish{});
  }

  void write_checkpoint() {
    const auto& first = snapshots_.begin()->second;  // worker rank 1's: it has the parameters
    for (const auto& [rank, snapshot] : snapshots_)
      if (snapshot.iteration != first.iteration)
        throw core::RuntimeError("checkpoint snapshots of iterations " +
                                 std::to_string(first.iteration) + " and " +
                                 std::to_string(snapshot.iteration) + " (rank " +
                                 std::to_string(rank) + ") in one round");
    take_parameters(first.parameters, snapshots_.begin()->first);
    auto c = runtime::make_checkpoint(context_, model_, nullptr, first.iteration,
                                      runtime::DataPosition{first.iteration / batches_, {}});
    if (cfg_.training.save_updater) {
      c.optimizer_step = first.state.optimizer_step;
      c.optimizer_state = first.state.optimizer_state;
    } else {
      for (const auto& [rank, snapshot] : snapshots_)
        c.worker_optimizers.push_back(
            {snapshot.state.optimizer_step, snapshot.state.optimizer_state});
    }
    checkpointer_.write(c);
    checkpoint_mark_ = first.iteration;
    snapshots_.clear();
  }

  void worker_done(const AveragingDone& done, int worker) {
    progress_.add(done.report);
    peak_memory_.add(worker, done.peak_bytes);
    if (!done.parameters.empty()) take_parameters(done.parameters, worker);
    // Collective figures: every worker counts the same rounds and the same mismatches.
    totals_.rounds = std::max(totals_.rounds, done.totals.rounds);
    totals_.verified_rounds = std::max(totals_.verified_rounds, done.totals.verified_rounds);
    totals_.mismatched_rounds = std::max(totals_.mismatched_rounds, done.totals.mismatched_rounds);
    last_epoch_minibatches_ = done.minibatches;
    done_.insert(worker);
  }

  // Every worker is done: the summary, then model.h5, or the stop's requeue.
  int finish() {
    GS_CHECK(snapshots_.empty(), "a checkpoint was left incomplete when the workers finished");
    summarize();
    if (cfg_.training.verify_averaging && totals_.mismatched_rounds > 0)
      throw core::RuntimeError("parameter averaging: the workers' parameters differed after " +
                               std::to_string(totals_.mismatched_rounds) + " of " +
                               std::to_string(totals_.verified_rounds) + " rounds");
    // The checkpoint is written (after a stop): the workers may exit now.
    return end_run(stopped_, progress_.step(), last_epoch_minibatches_);
  }

  void summarize() {
    const auto& total = progress_.total();
    const double round_bytes =
        runtime::ratio(static_cast<double>(total.bytes), static_cast<double>(total.rounds));
    const double step_bytes =
        runtime::ratio(static_cast<double>(total.bytes), static_cast<double>(total.steps));
    const double wait_mean = runtime::ratio(total.wait_sum, static_cast<double>(total.rounds));
    const bool verified = cfg_.training.verify_averaging;
    const bool identical = totals_.mismatched_rounds == 0;
    char line[512];
    std::snprintf(
        line, sizeof line,
        "averaging summary: %lld steps, %lld rounds of %.0f B per worker (%.0f B/worker/step"
        "), allreduce wait mean %.2f ms max %.2f ms%s",
        static_cast<long long>(total.steps), static_cast<long long>(totals_.rounds), round_bytes,
        step_bytes, 1e3 * wait_mean, 1e3 * total.wait_max,
        verified ? (identical ? ", workers bit-identical after every round: OK"
                              : ", workers DIFFERED after some rounds: FAILED")
                 : "");
    core::log_info(line);
    report::JsonLine summary;
    summary.add("kind", "averaging_summary")
        .add("steps", total.steps)
        .add("rounds", totals_.rounds)
        .add("averaging_frequency", cfg_.training.averaging_frequency)
        .add("save_updater", cfg_.training.save_updater)
        .add("bytes_per_worker_round", round_bytes)
        .add("bytes_per_worker_step", step_bytes)
        .add("dense_bytes", static_cast<std::int64_t>(4 * model_.parameter_count()))
        .add("wait_mean_seconds", wait_mean)
        .add("wait_max_seconds", total.wait_max)
        .add("verified_rounds", totals_.verified_rounds)
        .add("mismatched_rounds", totals_.mismatched_rounds);
    if (verified) summary.add("averaging_identical", identical);
    context_.metrics.write(summary);
  }

  std::int64_t first_iteration_;
  AveragingProgress progress_;
  std::map<int, AveragingSnapshot> snapshots_;  // of the checkpoint being assembled
  AveragingTotals totals_;
  std::set<int> done_;  // workers whose AveragingDone is in
  std::int64_t last_epoch_minibatches_ = 0;
  bool stopped_ = false;  // the workers stopped after a checkpoint
};

}  // namespace

int run_averaging_master(runtime::RunContext& context, GroupSession& session) {
  return AveragingMaster(context, session).run_loop();
}

}  // namespace gradshare::train
