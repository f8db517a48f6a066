// averaging/worker.cpp: a parameter-averaging worker: trains its share of each epoch's
// minibatches on its own replica, and every training.averaging_frequency steps (and at an
// epoch's end) averages parameters (and updater state) with the other workers, then votes with
// them on stopping, checkpointing, divergence and early stopping.
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
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "train/replica.h"
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
// Finish: early stopping ends training as if this were the last round).
struct RoundVotes {
  bool stop = false;
  bool checkpoint = false;
  bool diverged = false;
  bool finish = false;
};

RoundVotes agree(const RoundVotes& mine, comm::WorkerGroup& workers) {
  std::int32_t votes[4] = {mine.stop, mine.checkpoint, mine.diverged, mine.finish};
  workers.allreduce_max(votes);
  return {votes[0] != 0, votes[1] != 0, votes[2] != 0, votes[3] != 0};
}

class AveragingWorker {
 public:
  AveragingWorker(RunContext& context, comm::ControlChannel& control, comm::WorkerGroup& workers)
      : context_(context),
        cfg_(context.config),
        control_(control),
        workers_(workers),
        index_(workers.index()),
        count_(workers.size()),
        batches_(minibatches_per_epoch(context.config, context.data.train)),
        steps_per_epoch_(steps_per_epoch(cfg_, context.data.train, count_)),
        replica_(cfg_, steps_per_epoch_ * cfg_.training.epochs, steps_per_epoch_,
                 static_cast<std::uint64_t>(context.rank)),
        checkpointer_(context),
        divergence_(cfg_.training) {
    auto start = receive<Start>(control_, 0, "initial model");
    iteration_ = start.step;
    apply_start_state(start.state, replica_.model(), replica_.optimizer());
    buffer_.emplace(replica_.parameters(),
                    cfg_.training.save_updater ? &replica_.optimizer() : nullptr);
    checkpointer_.mark_written(iteration_);
    // The epoch of a resumed run continues at its first untrained minibatch; step_ (the
    // schedule's clock) counts steps as an undisturbed run with this many workers would.
    step_ =
        iteration_ / batches_ * steps_per_epoch_ + (iteration_ % batches_ + count_ - 1) / count_;
  }

  int run() {
    for (std::int64_t epoch = iteration_ / batches_;
         epoch < cfg_.training.epochs && !stopped_ && !finished_early_; ++epoch) {
      if (const auto code = train_epoch(epoch)) return *code;
      if (!stopped_ && !finished_early_ && index_ == 0 && epoch + 1 < cfg_.training.epochs) {
        // The step the epoch record gets: minibatches trained by all workers together.
        send(control_, 0, EpochModel{epoch + 1, (epoch + 1) * batches_, replica_.copy_parameters()});
      }
    }
    return finish();
  }

 private:
  // This worker's minibatches of `epoch`, from `first` on (those trained before a resume
  // skipped); an exit code when the run ends inside it.
  std::optional<int> train_epoch(std::int64_t epoch) {
    const auto& train_set = context_.data.train;
    const std::int64_t first = iteration_ - epoch * batches_;
    const std::int64_t steps = (batches_ - first + count_ - 1) / count_;
    data::EpochPlan plan(train_set.size(), static_cast<std::size_t>(cfg_.training.batch_size),
                         static_cast<std::size_t>(cfg_.data.partition_batches),
                         static_cast<std::uint64_t>(cfg_.run.seed), epoch, cfg_.data.shuffle);
    std::vector<std::vector<std::uint32_t>> mine;
    for (std::int64_t s = 0; s < steps; ++s)
      if (const std::int64_t b = first + s * count_ + index_; b < batches_) {
        const auto indices = plan.batch_indices(static_cast<std::size_t>(b));
        mine.emplace_back(indices.begin(), indices.end());
      }
    data::read_ahead(train_set, std::move(mine));
    for (std::int64_t s = 0; s < steps; ++s, ++step_) {
      if (const std::int64_t b = first + s * count_ + index_; b < batches_)
        train_step(plan.batch_indices(static_cast<std::size_t>(b)));
      const bool epoch_end = s + 1 == steps;
      if (++since_round_ == cfg_.training.averaging_frequency || epoch_end) {
        iteration_ = epoch * batches_ + std::min(first + (s + 1) * count_, batches_);
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
    replica_.compute_update(step_);
    replica_.apply_update();
    report_.count(result);
  }

  // A round: the average, then the votes; an exit code when the workers diverged.
  std::optional<int> round(bool epoch_end) {
    average();
    since_round_ = 0;
    stop_asked_ =
        stop_asked_ || core::stop_requested() || try_receive<StateRequest>(control_, 0).has_value();
    finish_asked_ = finish_asked_ || try_receive<Finish>(control_, 0).has_value();
    // Nothing to save at the very end: model.h5 follows.
    const bool unfinished = iteration_ < batches_ * cfg_.training.epochs;
    const auto votes =
        agree({stop_asked_,
               index_ == 0 && unfinished &&
                   (checkpointer_.due(iteration_) || (epoch_end && checkpointer_.at_epoch_end())),
               diverged_.has_value(), finish_asked_},
              workers_);
    if (votes.diverged) {  // the averaged model is not saved: the master ends the run
      if (diverged_) send(control_, 0, Diverged{step_ + 1, *diverged_});
      control_.flush();
      return core::kExitDiverged;
    }
    stopped_ = votes.stop && unfinished;
    if (stopped_ || votes.checkpoint) {
      send_snapshot(stopped_);
      checkpointer_.mark_written(iteration_);
    }
    if (stopped_ && index_ == 0)
      core::log_warn("stop requested: checkpoint sent at minibatch " + std::to_string(iteration_) +
                     ", stopping");
    finished_early_ = !stopped_ && votes.finish;
    return std::nullopt;
  }

  void average() {
    auto values = buffer_->gather();
    core::Stopwatch clock;
    workers_.allreduce_sum(values);
    const double waited = clock.seconds();
    buffer_->scatter_mean(count_);
    ++totals_.rounds;
    ++report_.rounds;
    report_.bytes += static_cast<std::int64_t>(buffer_->bytes());
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
    if (!same_on_all(fingerprint(buffer_->gather()), workers_)) {
      ++totals_.mismatched_rounds;
      core::log_warn("averaging round " + std::to_string(totals_.rounds) +
                     ": the workers' parameters are not bit-identical");
    }
  }

  // After a round every worker holds the same parameters: worker 0 sends them, and its updater
  // state serves all when that state is averaged too; otherwise every worker sends its own.
  void send_snapshot(bool stop) {
    if (index_ != 0 && cfg_.training.save_updater) return;
    AveragingSnapshot snapshot{
        stop, iteration_, {}, capture_worker_state(replica_.optimizer(), 0.0f)};
    if (index_ == 0) snapshot.parameters = replica_.copy_parameters();
    send(control_, 0, snapshot);
  }

  void send_report() {
    report_.seconds = report_clock_.seconds();
    report_clock_.restart();
    send(control_, 0, report_);
    report_ = AveragingReport{};
  }

  int finish() {
    report_.seconds = report_clock_.seconds();
    AveragingDone done{report_, totals_, core::peak_resident_bytes(), {}};
    if (index_ == 0) done.parameters = replica_.copy_parameters();
    send(control_, 0, done);
    control_.flush();
    const int code = stopped_
                         ? receive<Shutdown>(control_, 0, "the master's stop checkpoint").exit_code
                         : core::kExitOk;
    core::log_info("worker done: " + std::to_string(step_) + " steps, " +
                   std::to_string(totals_.rounds) + " averaging rounds" +
                   (stopped_ ? " (stopped for a requeue)" : ""));
    return code;
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  comm::ControlChannel& control_;
  comm::WorkerGroup& workers_;
  int index_;
  int count_;
  std::int64_t batches_;
  std::int64_t steps_per_epoch_;
  Replica replica_;
  std::optional<AveragingBuffer> buffer_;
  Checkpointer checkpointer_;
  DivergenceGuard divergence_;
  // Minibatches of the run trained by all workers together (a round boundary on resume).
  std::int64_t iteration_ = 0;
  std::int64_t step_ = 0;
  std::int64_t since_round_ = 0;
  AveragingReport report_;
  AveragingTotals totals_;
  core::Stopwatch report_clock_;
  std::optional<std::string> diverged_;  // this worker's guard fired: the reason
  bool stop_asked_ = false;              // a signal here, or the master's StateRequest
  bool finish_asked_ = false;            // the master's Finish arrived (early stopping)
  bool stopped_ = false;
  bool finished_early_ = false;  // the workers agreed to end training at this round
};

}  // namespace

int run_averaging_worker(RunContext& context, comm::ControlChannel& control,
                         comm::WorkerGroup& workers) {
  return AveragingWorker(context, control, workers).run();
}

}  // namespace gradshare::train
