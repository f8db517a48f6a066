// averaging/parameter_averaging.cpp: the parameter-averaging master and workers (protocol in
// parameter_averaging.h).
#include "train/averaging/parameter_averaging.h"


#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "comm/job.h"
#include "comm/control_channel.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/schedule.h"
#include "train/averaging/protocol.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/epoch_report.h"
#include "train/model_file.h"
#include "train/peak_memory.h"
#include "train/progress.h"
#include "train/replica.h"
#include "train/progress_window.h"
#include "train/worker_state.h"

namespace gradshare::train {

AveragingBuffer::AveragingBuffer(std::span<float> parameters, nn::Optimizer* optimizer) {
  parts_.push_back(parameters);
  if (optimizer)
    for (const auto& state : optimizer->state()) parts_.push_back(state.values);
  std::size_t total = 0;
  for (const auto& part : parts_) total += part.size();
  buffer_.resize(total);
}

std::span<float> AveragingBuffer::gather() {
  auto out = buffer_.begin();
  for (const auto& part : parts_) out = std::copy(part.begin(), part.end(), out);
  return buffer_;
}

void AveragingBuffer::scatter_mean(int workers) {
  GS_CHECK(workers > 0, "averaging over " + std::to_string(workers) + " workers");
  const float divisor = static_cast<float>(workers);
  for (auto& value : buffer_) value /= divisor;
  auto in = buffer_.begin();
  for (const auto& part : parts_) {
    std::copy(in, in + static_cast<std::ptrdiff_t>(part.size()), part.begin());
    in += static_cast<std::ptrdiff_t>(part.size());
  }
}

std::uint64_t fingerprint(std::span<const float> values) {
  std::uint64_t hash = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size_bytes(); ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

// The master's periodic progress line and "step" metrics record.
class AveragingProgress {
 public:
  AveragingProgress(RunContext& context, std::int64_t steps_per_epoch, std::int64_t first_step)
      : context_(context), window_(context, steps_per_epoch, context.worker_count(), first_step) {}

  void add(const AveragingReport& report) { window_.add(report); }
  const AveragingReport& total() const { return window_.total(); }
  // Minibatches of the whole run, those before a resume included.
  std::int64_t step() const { return window_.step(); }

  void maybe_log() {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double bytes_per_step = ratio(static_cast<double>(w.bytes), static_cast<double>(w.steps));
    const double wait_mean = ratio(w.wait_sum, static_cast<double>(w.rounds));
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
  RunContext& context_;
  ProgressWindow<AveragingReport> window_;
};

std::int64_t batches_per_epoch(const RunContext& context) {
  const auto& cfg = context.config;
  return static_cast<std::int64_t>(
      data::EpochPlan(context.data.train.size(), static_cast<std::size_t>(cfg.training.batch_size),
                      static_cast<std::size_t>(cfg.data.partition_batches),
                      static_cast<std::uint64_t>(cfg.run.seed), 0, false)
          .batch_count());
}

void copy_parameters(std::span<const float> from, nn::Model& model, int worker) {
  if (from.size() != model.parameter_count())
    throw core::RuntimeError("worker rank " + std::to_string(worker) + " sent " +
                             std::to_string(from.size()) + " parameters, the model has " +
                             std::to_string(model.parameter_count()));
  std::copy(from.begin(), from.end(), model.parameters().begin());
}

// Where a resumed run starts: the checkpoint's iteration (minibatches trained by all workers
// together, a round boundary) must lie in its epoch under this config. Another strategy's
// iteration counts something else: such a run restarts the checkpoint's epoch.
std::int64_t resume_iteration(const ckpt::Checkpoint& checkpoint, std::int64_t batches,
                              std::int64_t epochs) {
  if (checkpoint.strategy != "parameter_averaging") {
    const std::int64_t epoch = std::clamp<std::int64_t>(checkpoint.epoch, 0, epochs);
    core::log_info("the checkpoint was written by " + checkpoint.strategy +
                   ": its position within an epoch does not carry over; epoch " +
                   std::to_string(epoch + 1) + " starts from its first minibatch");
    return epoch * batches;
  }
  if (checkpoint.iteration < 0 || checkpoint.iteration > batches * epochs ||
      checkpoint.iteration / batches != checkpoint.epoch)
    throw core::UserError("checkpoint at iteration " + std::to_string(checkpoint.iteration) +
                          " of epoch " + std::to_string(checkpoint.epoch + 1) +
                          " does not fit this config's " + std::to_string(batches) +
                          " minibatches per epoch (did the data or training.batch_size change?)");
  return checkpoint.iteration;
}

// Every worker gets where to start (iteration) and what from (parameters, its updater state).
std::int64_t start_workers(RunContext& context, comm::ControlChannel& control, nn::Model& model,
                           std::int64_t batches) {
  const auto& cfg = context.config;
  const auto resume = Checkpointer::find_resume(context);
  std::int64_t iteration = 0;
  if (resume) {
    iteration = resume_iteration(*resume, batches, cfg.training.epochs);
    restore_checkpoint(*resume, "checkpoint", model, nullptr);
    const auto workers = static_cast<std::int64_t>(context.worker_count());
    note_resize(
        context, *resume,
        "epoch " + std::to_string(iteration / batches + 1) + " continues at minibatch " +
            std::to_string(iteration % batches) + " of " + std::to_string(batches) +
            ", split over " + std::to_string(workers) + " workers; " +
            (resume->worker_optimizers.empty()
                 ? std::string("every worker starts from the averaged updater state")
                 : "worker w starts from saved worker (w mod " +
                       std::to_string(resume->worker_optimizers.size()) + ")'s updater state"));
  }
  for (int w = 1; w <= context.worker_count(); ++w)
    send(control, w, Start{iteration, start_state(resume, static_cast<std::size_t>(w - 1))});
  return iteration;
}

int run_master(RunContext& context, comm::ControlChannel& control) {
  const auto& cfg = context.config;
  nn::Model model = nn::Model::build(cfg.model, static_cast<std::uint64_t>(cfg.run.seed));
  const std::size_t n = model.parameter_count();
  core::log_info("model: " + std::to_string(n) + " parameters\n" + model.summary());
  if (cfg.training.averaging_frequency > kAveragingFrequencyWarning)
    core::log_warn("training.averaging_frequency " +
                   std::to_string(cfg.training.averaging_frequency) + " is above " +
                   std::to_string(kAveragingFrequencyWarning) +
                   ": Deeplearning4j's documentation reports that convergence suffers when "
                   "parameters are averaged this rarely");
  const std::int64_t batches = batches_per_epoch(context);
  Checkpointer checkpointer(context);
  const std::int64_t first_iteration = start_workers(context, control, model, batches);
  EpochReporter reporter(context);
  AveragingProgress progress(context, batches, first_iteration);
  const int workers = context.worker_count();
  // Averaged updater state is the same on every worker: worker 0's serves all.
  const int snapshots_per_checkpoint = cfg.training.save_updater ? 1 : workers;
  std::map<int, AveragingSnapshot> snapshots;  // of the checkpoint being assembled
  auto write_checkpoint = [&] {
    const auto& first = snapshots.begin()->second;  // worker rank 1's: it has the parameters
    for (const auto& [rank, snapshot] : snapshots)
      if (snapshot.iteration != first.iteration)
        throw core::RuntimeError("checkpoint snapshots of iterations " +
                                 std::to_string(first.iteration) + " and " +
                                 std::to_string(snapshot.iteration) + " (rank " +
                                 std::to_string(rank) + ") in one round");
    copy_parameters(first.parameters, model, snapshots.begin()->first);
    auto c = make_checkpoint(context, model, nullptr, first.iteration,
                             DataPosition{first.iteration / batches, {}});
    if (cfg.training.save_updater) {
      c.optimizer_step = first.state.optimizer_step;
      c.optimizer_state = first.state.optimizer_state;
    } else {
      for (const auto& [rank, snapshot] : snapshots)
        c.worker_optimizers.push_back(
            {snapshot.state.optimizer_step, snapshot.state.optimizer_state});
    }
    checkpointer.write(c);
    snapshots.clear();
  };
  AveragingTotals totals;
  PeakMemory peak_memory;
  int done = 0;
  bool stop_relayed = false;  // this rank's signal passed on to the workers
  bool stopped = false;       // the workers stopped after a checkpoint
  core::Backoff backoff;
  core::Deadline deadline(control.timeout_seconds());
  while (done < workers) {
    if (core::stop_requested() && !stop_relayed) {
      log_stop_request("stopping after the workers' next averaging round and a checkpoint", true);
      for (int w = 1; w <= workers; ++w) send(control, w, StateRequest{});
      stop_relayed = true;
    }
    auto message = control.try_receive();
    if (!message) {
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(control.timeout_seconds()) +
                                 " s waiting for the parameter-averaging workers (" +
                                 std::to_string(done) + " of " + std::to_string(workers) +
                                 " finished)");
      backoff.wait();
      continue;
    }
    backoff.reset();
    deadline = core::Deadline(control.timeout_seconds());
    switch (message->tag) {
      case AveragingReport::kTag:
        progress.add(decode<AveragingReport>(*message));
        progress.maybe_log();
        break;
      case EpochModel::kTag: {
        const auto epoch_model = decode<EpochModel>(*message);
        copy_parameters(epoch_model.parameters, model, message->source);
        const bool stopping_early = reporter.stop_early();
        reporter.end_of_epoch(model, epoch_model.epoch, epoch_model.step);
        if (reporter.stop_early() && !stopping_early)
          for (int w = 1; w <= workers; ++w) send(control, w, Finish{});
        break;
      }
      case AveragingSnapshot::kTag: {
        auto snapshot = decode<AveragingSnapshot>(*message);
        stopped = stopped || snapshot.stop;
        snapshots[message->source] = std::move(snapshot);
        if (static_cast<int>(snapshots.size()) == snapshots_per_checkpoint) write_checkpoint();
        break;
      }
      case Diverged::kTag: {  // every worker ends; nothing more is saved
        const auto diverged = decode<Diverged>(*message);
        log_divergence(context, "on rank " + std::to_string(message->source) + " at its step " +
                                    std::to_string(diverged.step) + ": " + diverged.reason);
        return core::kExitDiverged;
      }
      case AveragingDone::kTag: {
        const auto worker_done = decode<AveragingDone>(*message);
        progress.add(worker_done.report);
        peak_memory.add(message->source, worker_done.peak_bytes);
        if (!worker_done.parameters.empty())
          copy_parameters(worker_done.parameters, model, message->source);
        // Collective figures: every worker counts the same rounds and the same mismatches.
        const auto& worker_totals = worker_done.totals;
        totals.rounds = std::max(totals.rounds, worker_totals.rounds);
        totals.verified_rounds = std::max(totals.verified_rounds, worker_totals.verified_rounds);
        totals.mismatched_rounds =
            std::max(totals.mismatched_rounds, worker_totals.mismatched_rounds);
        ++done;
        break;
      }
      default:
        throw core::RuntimeError(std::string("unexpected ") + comm::tag_name(message->tag) +
                                 " message from rank " + std::to_string(message->source));
    }
  }
  GS_CHECK(snapshots.empty(), "a checkpoint was left incomplete when the workers finished");

  const auto& total = progress.total();
  const double round_bytes =
      ratio(static_cast<double>(total.bytes), static_cast<double>(total.rounds));
  const double step_bytes =
      ratio(static_cast<double>(total.bytes), static_cast<double>(total.steps));
  const double wait_mean = ratio(total.wait_sum, static_cast<double>(total.rounds));
  const bool verified = cfg.training.verify_averaging;
  const bool identical = totals.mismatched_rounds == 0;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "averaging summary: %lld steps, %lld rounds of %.0f B per worker (%.0f B/worker/step"
      "), allreduce wait mean %.2f ms max %.2f ms%s",
      static_cast<long long>(total.steps), static_cast<long long>(totals.rounds), round_bytes,
      step_bytes, 1e3 * wait_mean, 1e3 * total.wait_max,
      verified ? (identical ? ", workers bit-identical after every round: OK"
                            : ", workers DIFFERED after some rounds: FAILED")
               : "");
  core::log_info(line);
  JsonLine summary;
  summary.add("kind", "averaging_summary")
      .add("steps", total.steps)
      .add("rounds", totals.rounds)
      .add("averaging_frequency", cfg.training.averaging_frequency)
      .add("save_updater", cfg.training.save_updater)
      .add("bytes_per_worker_round", round_bytes)
      .add("bytes_per_worker_step", step_bytes)
      .add("dense_bytes", static_cast<std::int64_t>(4 * n))
      .add("wait_mean_seconds", wait_mean)
      .add("wait_max_seconds", total.wait_max)
      .add("verified_rounds", totals.verified_rounds)
      .add("mismatched_rounds", totals.mismatched_rounds);
  if (verified) summary.add("averaging_identical", identical);
  context.metrics.write(summary);
  peak_memory.summarize(context);
  if (verified && !identical)
    throw core::RuntimeError("parameter averaging: the workers' parameters differed after " +
                             std::to_string(totals.mismatched_rounds) + " of " +
                             std::to_string(totals.verified_rounds) + " rounds");
  if (stopped) {  // the checkpoint is written: the workers may exit now
    core::log_info("stopped after the checkpoint; exiting with " +
                   std::to_string(core::kExitRequeue) + " (requeue me)");
    for (int w = 1; w <= workers; ++w)
      send(control, w, Shutdown{core::kExitRequeue});
    control.flush();
    return core::kExitRequeue;
  }
  ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                         make_checkpoint(context, model, nullptr, progress.step(),
                                         DataPosition{cfg.training.epochs, {}}));
  reporter.finish(model);
  return core::kExitOk;
}

// True when every worker's `hash` is the same: one all-reduce of (hash, ~hash) under MAX
// gives the largest and (complemented) the smallest.
bool same_on_all(std::uint64_t hash, comm::WorkerGroup& workers) {
  std::uint64_t extremes[2] = {hash, ~hash};
  workers.allreduce_max(extremes);
  return extremes[0] == ~extremes[1];
}

// What the workers decide together at a round: stop (a signal on some worker, or the master's
// kStateRequest), checkpoint (worker 0's Checkpointer says one is due), diverged (some
// worker's divergence guard fired: the run ends and nothing more is saved) and finish (the
// master's kFinish: early stopping ends training as if this were the last round).
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

int run_worker(RunContext& context, comm::ControlChannel& control, comm::WorkerGroup& workers) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  const int index = workers.index(), count = workers.size();
  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const std::int64_t batches = batches_per_epoch(context);
  const std::int64_t total_batches = batches * cfg.training.epochs;
  const std::int64_t steps_per_epoch = (batches + count - 1) / count;
  Replica replica(cfg, steps_per_epoch * cfg.training.epochs, steps_per_epoch,
                  static_cast<std::uint64_t>(context.rank));
  auto& model = replica.model();
  auto& optimizer = replica.optimizer();
  auto start = receive<Start>(control, 0, "initial model");
  // Minibatches of the run trained by all workers together (a round boundary on resume).
  std::int64_t iteration = start.step;
  apply_start_state(start.state, model, optimizer);
  AveragingBuffer buffer(model.parameters(), cfg.training.save_updater ? &optimizer : nullptr);
  Checkpointer checkpointer(context);
  checkpointer.mark_written(iteration);

  AveragingReport report;
  AveragingTotals totals;
  core::Stopwatch report_clock;
  auto average = [&] {
    auto values = buffer.gather();
    core::Stopwatch clock;
    workers.allreduce_sum(values);
    const double waited = clock.seconds();
    buffer.scatter_mean(count);
    ++totals.rounds;
    ++report.rounds;
    report.bytes += static_cast<std::int64_t>(buffer.bytes());
    report.wait_sum += waited;
    report.wait_max = std::max(report.wait_max, waited);
    if (core::Logger::instance().enabled(core::LogLevel::kDebug)) {
      char line[96];
      std::snprintf(line, sizeof line, "averaging round %lld: %.3f ms in the all-reduce",
                    static_cast<long long>(totals.rounds), 1e3 * waited);
      core::log_debug(line);
    }
    if (cfg.training.verify_averaging) {
      ++totals.verified_rounds;
      if (!same_on_all(fingerprint(buffer.gather()), workers)) {
        ++totals.mismatched_rounds;
        core::log_warn("averaging round " + std::to_string(totals.rounds) +
                       ": the workers' parameters are not bit-identical");
      }
    }
  };
  // After a round every worker holds the same parameters: worker 0 sends them, and its updater
  // state serves all when that state is averaged too; otherwise every worker sends its own.
  auto send_snapshot = [&](bool stop) {
    if (index != 0 && cfg.training.save_updater) return;
    AveragingSnapshot snapshot{stop, iteration, {}, capture_worker_state(optimizer, 0.0f)};
    if (index == 0)
      snapshot.parameters.assign(model.parameters().begin(), model.parameters().end());
    send(control, 0, snapshot);
  };

  // The epoch of a resumed run continues at its first untrained minibatch; `step` (the
  // schedule's clock) counts steps as an undisturbed run with this many workers would.
  const std::int64_t first_epoch = iteration / batches;
  std::int64_t step = first_epoch * steps_per_epoch + (iteration % batches + count - 1) / count;
  std::int64_t since_round = 0;
  bool stop_asked = false;  // a signal here, or the master's kStateRequest
  DivergenceGuard divergence(cfg.training);
  std::optional<std::string> diverged;  // this worker's guard fired: the reason
  bool stopped = false;
  bool finish_asked = false;    // the master's kFinish arrived (early stopping)
  bool finished_early = false;  // the workers agreed to end training at this round
  for (std::int64_t epoch = first_epoch;
       epoch < cfg.training.epochs && !stopped && !finished_early; ++epoch) {
    const std::int64_t first = iteration - epoch * batches;  // trained before a resume
    const std::int64_t steps = (batches - first + count - 1) / count;
    data::EpochPlan plan(train_set.size(), batch_size,
                         static_cast<std::size_t>(cfg.data.partition_batches), seed, epoch,
                         cfg.data.shuffle);
    std::vector<std::vector<std::uint32_t>> mine;  // this worker's minibatches of the epoch
    for (std::int64_t s = 0; s < steps; ++s)
      if (const std::int64_t b = first + s * count + index; b < batches) {
        const auto indices = plan.batch_indices(static_cast<std::size_t>(b));
        mine.emplace_back(indices.begin(), indices.end());
      }
    data::read_ahead(train_set, std::move(mine));
    for (std::int64_t s = 0; s < steps; ++s, ++step) {
      const std::int64_t b = first + s * count + index;
      if (b < batches) {
        const auto result =
            replica.gradient(train_set, plan.batch_indices(static_cast<std::size_t>(b)));
        if (!diverged) diverged = divergence.check(step + 1, result.loss);
        replica.compute_update(step);
        replica.apply_update();
        ++report.steps;
        report.samples += result.samples;
        report.loss_sum += result.loss;
        report.correct += result.correct;
      }
      const bool epoch_end = s + 1 == steps;
      if (++since_round == cfg.training.averaging_frequency || epoch_end) {
        average();
        since_round = 0;
        iteration = epoch * batches + std::min(first + (s + 1) * count, batches);
        stop_asked = stop_asked || core::stop_requested() ||
                     try_receive<StateRequest>(control, 0).has_value();
        finish_asked = finish_asked || try_receive<Finish>(control, 0).has_value();
        // Nothing to save at the very end: model.h5 follows.
        const bool unfinished = iteration < total_batches;
        const auto votes = agree(
            {stop_asked,
             index == 0 && unfinished &&
                 (checkpointer.due(iteration) || (epoch_end && checkpointer.at_epoch_end())),
             diverged.has_value(), finish_asked},
            workers);
        if (votes.diverged) {  // the averaged model is not saved: the master ends the run
          if (diverged) send(control, 0, Diverged{step + 1, *diverged});
          control.flush();
          return core::kExitDiverged;
        }
        stopped = votes.stop && unfinished;
        if (stopped || votes.checkpoint) {
          send_snapshot(stopped);
          checkpointer.mark_written(iteration);
        }
        if (stopped) {
          if (index == 0)
            core::log_warn("stop requested: checkpoint sent at minibatch " +
                           std::to_string(iteration) + ", stopping");
          break;
        }
        if (votes.finish) {
          finished_early = true;
          break;
        }
      }
      if (report.steps >= cfg.logging.every_steps) {
        report.seconds = report_clock.seconds();
        report_clock.restart();
        send(control, 0, report);
        report = AveragingReport{};
      }
    }
    if (!stopped && !finished_early && index == 0 && epoch + 1 < cfg.training.epochs) {
      // The step the epoch record gets: minibatches trained by all workers together.
      send(control, 0,
           EpochModel{epoch + 1, (epoch + 1) * batches,
                      {model.parameters().begin(), model.parameters().end()}});
    }
  }
  report.seconds = report_clock.seconds();
  AveragingDone done{report, totals, core::peak_resident_bytes(), {}};
  if (index == 0) done.parameters.assign(model.parameters().begin(), model.parameters().end());
  send(control, 0, done);
  control.flush();
  const int code =
      stopped
          ? receive<Shutdown>(control, 0, "the master's stop checkpoint").exit_code
          : core::kExitOk;
  core::log_info("worker done: " + std::to_string(step) + " steps, " +
                 std::to_string(totals.rounds) + " averaging rounds" +
                 (stopped ? " (stopped for a requeue)" : ""));
  return code;
}

}  // namespace

int run_parameter_averaging(RunContext& context) {
  auto& job = *context.job;
  const auto workers = job.worker_group();  // null on the master
  const auto control =
      job.control_channel(static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  context.phase = RunContext::kTraining;
  return context.is_master() ? run_master(context, *control) : run_worker(context, *control, *workers);
}

}  // namespace gradshare::train
