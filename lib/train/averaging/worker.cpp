// averaging/worker.cpp: a parameter-averaging worker: trains its share of each epoch's
// minibatches on its own replica, and every training.averaging_frequency steps (and at an
// epoch's end) averages parameters (and updater state) with the other workers, then votes with
// them on stopping, checkpointing, divergence and early stopping. After a process failure the
// group repairs and resumes from the newest round any member completed (group_recovery.h): the
// steps since the previous round are trained again, by the workers that are left.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "train/averaging/parameter_averaging.h"
#include "train/averaging/protocol.h"
#include "train/averaging/roles.h"
#include "train/synchronous_worker.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// True when every worker's `hash` is the same: one all-reduce of (hash, ~hash) under MAX
// gives the largest and (complemented) the smallest.
bool same_on_all(std::uint64_t hash, comm::WorkerGroup& workers) {
  std::uint64_t extremes[2] = {hash, ~hash};
  workers.allreduce_max(extremes);
  return extremes[0] == ~extremes[1];
}

// What the workers decide together at a round: stop (a signal on some worker, or the master's
// StateRequest), checkpoint (worker 0's Checkpointer says one is due), diverged (some worker's
// divergence guard fired: the run ends and nothing more is saved) and finish (the master's
// Finish: early stopping ends training as if this were the last round); and the minibatches
// the workers trained since the previous round, summed.
struct RoundVotes {
  bool stop = false;
  bool checkpoint = false;
  bool diverged = false;
  bool finish = false;
  std::int64_t trained = 0;
};

RoundVotes agree(const RoundVotes& mine, comm::WorkerGroup& workers) {
  // Small integers add exactly in floats.
  float votes[5] = {static_cast<float>(mine.stop), static_cast<float>(mine.checkpoint),
                    static_cast<float>(mine.diverged), static_cast<float>(mine.finish),
                    static_cast<float>(mine.trained)};
  workers.allreduce_sum(votes);
  return {votes[0] > 0, votes[1] > 0, votes[2] > 0, votes[3] > 0,
          static_cast<std::int64_t>(votes[4])};
}

class AveragingWorker : public SynchronousWorker {
 public:
  AveragingWorker(runtime::RunContext& context, GroupSession& session, bool replacement)
      : SynchronousWorker(context, session, replacement),
        buffer_(replica_.parameters(),
                cfg_.training.save_updater ? &replica_.optimizer() : nullptr) {}

 private:
  void on_started() override {
    checkpointer_.mark_written(iteration_);
    committed_ = save_state();
  }

  int train() override {
    for (std::int64_t epoch = iteration_ / batches_;
         epoch < cfg_.training.epochs && !stopped_ && !finished_early_; ++epoch) {
      if (const auto code = train_epoch(epoch)) return *code;
      if (!stopped_ && !finished_early_ && epoch + 1 < cfg_.training.epochs) send_epoch_model();
    }
    return finish();
  }

  // This worker's minibatches of `epoch`, from `first` on (those trained before a resume
  // skipped); an exit code when the run ends inside it.
  std::optional<int> train_epoch(std::int64_t epoch) {
    const std::int64_t first = iteration_ - epoch * batches_;
    const int count = workers().size(), index = workers().index();
    const std::int64_t steps = (batches_ - first + count - 1) / count;
    const auto plan = plan_of(epoch);
    read_ahead_mine(plan, first);
    for (std::int64_t s = 0; s < steps; ++s) {
      if (const std::int64_t b = first + s * count + index; b < batches_)
        train_step(plan.batch_indices(static_cast<std::size_t>(b)));
      ++step_;  // before a round, whose state a recovery resumes from
      const bool epoch_end = s + 1 == steps;
      if (++since_round_ == cfg_.training.averaging_frequency || epoch_end) {
        iteration_ = epoch * batches_ + std::min(first + (s + 1) * count, batches_);
        if (const auto code = round(epoch_end)) return code;
        if (stopped_ || finished_early_) return std::nullopt;
      }
      if (report_.steps >= cfg_.logging.every_steps) send_report();
    }
    return std::nullopt;
  }

  void train_step(std::span<const std::uint32_t> indices) {
    const auto result = replica_.gradient(context_.data.train, indices);
    if (!diverged_) diverged_ = divergence_.check(step_ + 1, result.loss);
    // The updater's step count (Adam's bias correction) follows the schedule's clock, the same
    // on every worker: a worker idle at an epoch's end would otherwise lag one step per epoch,
    // and a recovery could not give each worker back its own count.
    replica_.optimizer().set_step(step_);
    replica_.compute_update(step_);
    replica_.apply_update();
    report_.count(result);
    ++trained_since_round_;
    injector_.at_step(++steps_here_);
  }

  // A round: the average, then the votes; an exit code when the workers diverged.
  std::optional<int> round(bool epoch_end) {
    average();
    since_round_ = 0;
    stop_asked_ =
        stop_asked_ || core::stop_requested() || try_receive<StateRequest>(control(), 0).has_value();
    finish_asked_ = finish_asked_ || try_receive<Finish>(control(), 0).has_value();
    // Nothing to save at the very end: model.h5 follows.
    const bool unfinished = iteration_ < batches_ * cfg_.training.epochs;
    const auto votes =
        agree({stop_asked_,
               workers().index() == 0 && unfinished &&
                   (checkpointer_.due(iteration_) || (epoch_end && checkpointer_.at_epoch_end())),
               diverged_.has_value(), finish_asked_, trained_since_round_},
              workers());
    if (votes.diverged) {  // the averaged model is not saved: the master ends the run
      if (diverged_) send(control(), 0, Diverged{step_, *diverged_});
      control().flush();
      return core::kExitDiverged;
    }
    trained_since_round_ = 0;
    epoch_minibatches_ += votes.trained;
    if (epoch_end) end_epoch_count();
    stopped_ = votes.stop && unfinished;
    finished_early_ = !stopped_ && votes.finish;
    if (stopped_ || votes.checkpoint) checkpoint_mark_ = iteration_;
    committed_ = save_state();  // what a recovery resumes from
    if (stopped_ || votes.checkpoint) send_snapshot(stopped_);
    if (stopped_ && workers().index() == 0)
      core::log_warn("stop requested: checkpoint sent at minibatch " + std::to_string(iteration_) +
                     ", stopping");
    return std::nullopt;
  }

  void average() {
    auto values = buffer_.gather();
    core::Stopwatch clock;
    workers().allreduce_sum(values);
    const double waited = clock.seconds();
    buffer_.scatter_mean(workers().size());
    ++totals_.rounds;
    ++report_.rounds;
    report_.bytes += static_cast<std::int64_t>(buffer_.bytes());
    report_.wait_sum += waited;
    report_.wait_max = std::max(report_.wait_max, waited);
    if (core::Logger::instance().enabled(core::LogLevel::kDebug)) {
      char line[96];
      std::snprintf(line, sizeof line, "averaging round %lld: %.3f ms in the all-reduce",
                    static_cast<long long>(totals_.rounds), 1e3 * waited);
      core::log_debug(line);
    }
    if (!cfg_.training.verify_averaging) return;
    ++totals_.verified_rounds;
    if (!same_on_all(fingerprint(buffer_.gather()), workers())) {
      ++totals_.mismatched_rounds;
      core::log_warn("averaging round " + std::to_string(totals_.rounds) +
                     ": the workers' parameters are not bit-identical");
    }
  }

  // After a round every worker holds the same parameters: worker 0 sends them, and its updater
  // state serves all when that state is averaged too; otherwise every worker sends its own.
  void send_snapshot(bool stop) {
    checkpointer_.mark_written(iteration_);
    const int index = workers().index();
    if (index != 0 && cfg_.training.save_updater) return;
    AveragingSnapshot snapshot{
        stop, iteration_, {}, capture_worker_state(replica_.optimizer(), 0.0f)};
    if (index == 0) snapshot.parameters = replica_.copy_parameters();
    send(control(), 0, snapshot);
  }

  void send_report() {
    report_.seconds = report_clock_.seconds();
    report_clock_.restart();
    send(control(), 0, report_);
    report_ = AveragingReport{};
  }

  // The end: AveragingDone, then the master's word (a failure then is the master's to act on:
  // job_session.h).
  int finish() {
    report_.seconds = report_clock_.seconds();
    AveragingDone done{report_, totals_, core::peak_resident_bytes(), last_epoch_minibatches_, {}};
    if (workers().index() == 0) done.parameters = replica_.copy_parameters();
    send(control(), 0, done);
    report_ = AveragingReport{};
    const int code = hand_in_and_wait();
    core::log_info("worker done: " + std::to_string(step_) + " steps, " +
                   std::to_string(totals_.rounds) + " averaging rounds" + replica_.clipping_summary() +
                   (stopped_ ? " (stopped for a requeue)" : ""));
    return code;
  }

  // A recovery resumes from the newest round any member completed.
  std::uint64_t progress() const override {
    return static_cast<std::uint64_t>(totals_.rounds + 1);
  }
  std::vector<std::uint8_t> state_to_offer() override { return committed_; }

  // After a round every worker holds the same state but for the updater state when it is not
  // averaged: {totals (rounds, verified, mismatched), stopped, finished early: u8 x 2}.
  void write_own_state(comm::ByteWriter& writer) override {
    writer.put(totals_).put<std::uint8_t>(stopped_).put<std::uint8_t>(finished_early_);
  }
  void read_own_state(comm::ByteReader& reader) override {
    totals_ = reader.get<AveragingTotals>();
    stopped_ = reader.get<std::uint8_t>() != 0;
    finished_early_ = reader.get<std::uint8_t>() != 0;
  }

  void on_state_loaded() override {
    checkpointer_.mark_written(std::max<std::int64_t>(checkpoint_mark_, 0));
    since_round_ = 0;
    trained_since_round_ = 0;
    diverged_.reset();
    committed_ = save_state();
  }

  // What the master lacks is sent again: worker index 0's epoch model, and the snapshots.
  void send_what_master_lacks(const GroupResume& resume) override {
    const std::int64_t epochs = iteration_ / batches_;
    const std::int64_t resent = resend_kept_epoch_model(resume);
    if (epochs > std::max(resume.epochs_evaluated, resent) && epochs < cfg_.training.epochs &&
        iteration_ % batches_ == 0)
      send_epoch_model();
    if (checkpoint_mark_ > resume.checkpoint_mark) send_snapshot(stopped_);
  }

  AveragingBuffer buffer_;
  std::vector<std::uint8_t> committed_;  // save_state() after the latest round
  std::int64_t since_round_ = 0;
  std::int64_t trained_since_round_ = 0;  // by this worker
  AveragingReport report_;
  AveragingTotals totals_;
  core::Stopwatch report_clock_;
  std::optional<std::string> diverged_;  // this worker's guard fired: the reason
  bool stopped_ = false;
  bool finished_early_ = false;  // the workers agreed to end training at this round
};

}  // namespace

int run_averaging_worker(runtime::RunContext& context, GroupSession& session, bool replacement) {
  return AveragingWorker(context, session, replacement).run();
}

}  // namespace gradshare::train
