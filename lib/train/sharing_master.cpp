// sharing_master.cpp: the gradient-sharing master: hands out partitions, applies and relays
// every update, aggregates the workers' figures, evaluates each finished epoch, drains the job
// and checks that every replica ended with the master's model.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "train/checkpointer.h"
#include "train/epoch_report.h"
#include "train/gradient_sharing.h"
#include "train/model_file.h"
#include "train/partition_messages.h"
#include "train/partition_scheduler.h"
#include "train/progress.h"
#include "train/progress_window.h"
#include "train/sharing_roles.h"
#include "train/update_exchange.h"
#include "train/worker_report.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// The periodic progress line: training figures over all workers since the previous line.
class SharingProgress {
 public:
  SharingProgress(RunContext& context, std::int64_t steps_per_epoch, std::size_t parameter_count,
                  std::int64_t first_step)
      : context_(context), dense_bytes_(4.0 * static_cast<double>(parameter_count)),
        window_(context, steps_per_epoch, context.worker_count(), first_step) {}

  void add(const WorkerReport& report) { window_.add(report); }
  // Steps of the whole run, those before a resume included.
  std::int64_t steps() const { return window_.step(); }
  const WorkerReport& total() const { return window_.total(); }

  void maybe_log(double relayed_by_master) {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double bytes_per_step = ratio(static_cast<double>(w.bytes), static_cast<double>(w.steps));
    const double dense_ratio = ratio(dense_bytes_, bytes_per_step);
    const double sparsity = ratio(w.sparsity_sum, static_cast<double>(w.messages));
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s  tau %.2e..%.2e  sparsity %.2e  enc s/b/c %lld/%lld/%lld  "
                  "%.0f B/worker/step (dense/%.0f)  relayed %.0f  back-pressure %lld  %s",
                  window_.head().c_str(), w.tau_min, w.tau_max, sparsity,
                  static_cast<long long>(w.sparse_messages),
                  static_cast<long long>(w.bitmap_messages),
                  static_cast<long long>(w.compressed_messages), bytes_per_step, dense_ratio,
                  relayed_by_master + static_cast<double>(w.relayed),
                  static_cast<long long>(w.backpressure), window_.eta().c_str());
    core::log_info(line);
    context_.metrics.write(window_.record()
                               .add("tau_min", static_cast<double>(w.tau_min))
                               .add("tau_max", static_cast<double>(w.tau_max))
                               .add("sparsity", sparsity)
                               .add("sparse_messages", w.sparse_messages)
                               .add("bitmap_messages", w.bitmap_messages)
                               .add("compressed_messages", w.compressed_messages)
                               .add("bytes_per_worker_step", bytes_per_step)
                               .add("dense_ratio", dense_ratio)
                               .add("backpressure", w.backpressure)
                               .add("duplicates", w.duplicates));
    window_.next_window();
  }

 private:
  RunContext& context_;
  double dense_bytes_;
  ProgressWindow<WorkerReport> window_;
};

// The master's state and its reactions to the workers' messages.
class SharingMaster {
 public:
  SharingMaster(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control)
      : context_(context), cfg_(context.config), control_(control),
        model_(nn::Model::build(cfg_.model, static_cast<std::uint64_t>(cfg_.run.seed))),
        exchange_(plane, 0, context.size, model_.parameter_count()),
        shape_(context.data.train.size(), static_cast<std::size_t>(cfg_.training.batch_size),
               static_cast<std::size_t>(cfg_.data.partition_batches),
               static_cast<std::uint64_t>(cfg_.run.seed), 0, false),
        checkpointer_(context), reporter_(context),
        targets_(static_cast<std::size_t>(context.size), 0),
        tau_(static_cast<std::size_t>(context.worker_count()),
             static_cast<float>(cfg_.encoding.initial_threshold)) {}

  int run() {
    core::log_info("model: " + std::to_string(model_.parameter_count()) + " parameters\n" +
                   model_.summary());
    const auto resume = Checkpointer::find_resume(context_);
    start_workers(resume);
    const auto steps_per_epoch = static_cast<std::int64_t>(shape_.batch_count());
    progress_.emplace(context_, steps_per_epoch, model_.parameter_count(),
                      resume ? resume->iteration : 0);
    const double cpu_start = process_cpu_seconds();
    core::Stopwatch wall;
    core::Backoff backoff;
    while (!finished()) {
      bool busy = exchange_.poll(model_.parameters()) > 0;
      while (auto message = control_.try_receive()) {
        busy = true;
        handle(*message);
      }
      for (const auto epoch : scheduler_->take_completed_epochs()) {
        reporter_.end_of_epoch(model_, epoch + 1, progress_->steps());
        if (checkpointer_.at_epoch_end()) request_checkpoint();
      }
      if (checkpointer_.due(progress_->steps())) request_checkpoint();
      if (core::stop_requested() && !stopping_) {
        core::log_warn(std::string(core::stop_signal_name()) +
                       " received: finishing the partitions in flight, then checkpointing");
        stopping_ = true;
      }
      progress_->maybe_log(static_cast<double>(exchange_.stats().relayed));
      if (done_ == context_.worker_count() && !drain_sent_) send_drain_targets();
      if (busy) backoff.reset(); else backoff.wait();
    }
    const int exit_code = stopping_ ? core::kExitRequeue : core::kExitOk;
    if (stopping_) write_checkpoint(fetch_worker_states());
    comm::ByteWriter shutdown;
    shutdown.put<std::int32_t>(exit_code);
    for (int w = 1; w <= context_.worker_count(); ++w)
      control_.send(w, comm::Tag::kShutdown, shutdown.bytes());
    const bool equivalent = check_equivalence();
    summarize(process_cpu_seconds() - cpu_start, wall.seconds(), equivalent);
    if (stopping_) return exit_code;
    ckpt::write_checkpoint(context_.run_directory.file("model.h5"), checkpoint_now({}));
    reporter_.finish(model_);
    if (!equivalent) throw core::RuntimeError("replicas diverged: model-equivalence check failed");
    return exit_code;
  }

 private:
  // Every worker first gets the model to start from: fresh, or the resumed checkpoint's.
  void start_workers(const std::optional<ckpt::Checkpoint>& resume) {
    StartState start;
    DataPosition position;
    if (resume) {
      restore_checkpoint(*resume, "checkpoint", model_, nullptr);
      position = data_position(*resume);
      start.resume = true;
      start.parameters.assign(model_.parameters().begin(), model_.parameters().end());
      start.worker.optimizer_step = resume->optimizer_step;
      start.worker.optimizer_state = resume->optimizer_state;
      for (std::size_t w = 0; w < tau_.size() && !resume->thresholds.empty(); ++w)
        tau_[w] = resume->thresholds[std::min(w, resume->thresholds.size() - 1)];
      if (static_cast<std::int64_t>(resume->world_size) != context_.size)
        core::log_info("resuming a " + std::to_string(resume->world_size) + "-rank run with " +
                       std::to_string(context_.size) + " ranks: every worker starts from the " +
                       "checkpoint's model and optimizer state");
    }
    scheduler_.emplace(cfg_.training.epochs, static_cast<std::int64_t>(shape_.partition_count()),
                       position);
    const auto residuals = resume ? split_residuals(*resume) : std::vector<std::vector<float>>{};
    for (int w = 1; w <= context_.worker_count(); ++w) {
      start.worker.tau = tau_[static_cast<std::size_t>(w - 1)];
      start.worker.residual =
          residuals.empty() ? std::vector<float>{} : residuals[static_cast<std::size_t>(w - 1)];
      control_.send(w, comm::Tag::kParameters, serialize(start));
    }
  }

  // One residual per worker of this run from a checkpoint's: a checkpoint of more workers has
  // the extra residuals added to this run's workers in turn, so no quantum is dropped.
  std::vector<std::vector<float>> split_residuals(const ckpt::Checkpoint& checkpoint) const {
    const std::size_t n = model_.parameter_count();
    const auto workers = static_cast<std::size_t>(context_.worker_count());
    std::vector<std::vector<float>> residuals(workers, std::vector<float>(n, 0.0f));
    const std::size_t saved = checkpoint.residuals.size() / n;
    for (std::size_t r = 0; r < saved; ++r) {
      auto& target = residuals[r % workers];
      for (std::size_t i = 0; i < n; ++i) target[i] += checkpoint.residuals[r * n + i];
    }
    return saved == 0 ? std::vector<std::vector<float>>{} : residuals;
  }

  void handle(const comm::ControlMessage& message) {
    const int worker = message.source;
    switch (message.tag) {
      case comm::Tag::kPartitionRequest: {
        comm::ByteReader reader(message.payload, "partition request");
        if (reader.get<std::uint8_t>() != 0) scheduler_->complete(worker);
        send_partition_grant(control_, worker, stopping_ ? std::nullopt : scheduler_->next(worker));
        break;
      }
      case comm::Tag::kMetrics: {
        const auto report = WorkerReport::deserialize(message.payload);
        if (report.steps > 0) tau_[static_cast<std::size_t>(worker - 1)] = report.tau_max;
        progress_->add(report);
        break;
      }
      case comm::Tag::kStateReply:
        state_replies_[worker] = deserialize_worker_state(message.payload);
        if (static_cast<int>(state_replies_.size()) == context_.worker_count())
          write_checkpoint(fetch_worker_states());
        break;
      case comm::Tag::kDone: {
        comm::ByteReader reader(message.payload, "done");
        targets_[static_cast<std::size_t>(worker)] = reader.get<std::uint64_t>();
        conservation_error_ = std::max(conservation_error_, reader.get<double>());
        ++done_;
        break;
      }
      case comm::Tag::kDrained: {
        comm::ByteReader reader(message.payload, "drained parameters");
        drained_[worker] = reader.get_vector<float>();
        break;
      }
      default:
        throw core::RuntimeError("unexpected " + std::string(comm::tag_name(message.tag)) +
                                 " message from rank " + std::to_string(worker));
    }
  }

  // Checkpoints need what only workers have (optimizer state, thresholds, residuals): ask
  // every worker; the checkpoint is written once all have replied.
  void request_checkpoint() {
    if (checkpoint_requested_ || drain_sent_) return;
    request_checkpoint_now();
  }

  // Waits for every worker's reply to the outstanding request (made here if none is).
  std::map<int, WorkerState> fetch_worker_states() {
    if (!checkpoint_requested_) request_checkpoint_now();
    for (int w = 1; w <= context_.worker_count(); ++w)
      if (!state_replies_.count(w))
        state_replies_[w] = deserialize_worker_state(
            control_.receive(w, comm::Tag::kStateReply, "worker state for the checkpoint").payload);
    checkpoint_requested_ = false;
    std::map<int, WorkerState> replies;
    replies.swap(state_replies_);
    return replies;
  }

  void request_checkpoint_now() {
    for (int w = 1; w <= context_.worker_count(); ++w)
      control_.send(w, comm::Tag::kStateRequest, {});
    checkpoint_requested_ = true;
  }

  // Parameters, position, version vector and thresholds from here; optimizer state from worker
  // 1; every worker's residual.
  ckpt::Checkpoint checkpoint_now(const std::map<int, WorkerState>& workers) {
    auto c = make_checkpoint(context_, model_, nullptr, progress_->steps(), scheduler_->position());
    if (!workers.empty()) {
      const auto& first = workers.begin()->second;
      c.optimizer_step = first.optimizer_step;
      c.optimizer_state = first.optimizer_state;
      for (const auto& [worker, state] : workers) {
        tau_[static_cast<std::size_t>(worker - 1)] = state.tau;
        c.residuals.insert(c.residuals.end(), state.residual.begin(), state.residual.end());
      }
    }
    c.thresholds = tau_;
    c.version_vector = exchange_.version_vector();
    return c;
  }

  void write_checkpoint(const std::map<int, WorkerState>& workers) {
    checkpointer_.write(checkpoint_now(workers));
  }

  void send_drain_targets() {
    comm::ByteWriter writer;
    writer.put_vector(targets_);
    for (int w = 1; w <= context_.worker_count(); ++w)
      control_.send(w, comm::Tag::kDrainTarget, writer.bytes());
    drain_sent_ = true;
  }

  // Every worker drained and every update it sent applied here.
  bool finished() const {
    if (!drain_sent_ || static_cast<int>(drained_.size()) != context_.worker_count() ||
        exchange_.has_backlog())
      return false;
    for (int origin = 1; origin <= context_.worker_count(); ++origin)
      if (exchange_.version_vector()[static_cast<std::size_t>(origin)] <
          targets_[static_cast<std::size_t>(origin)])
        return false;
    return true;
  }

  bool check_equivalence() {
    double worst = 0;
    for (const auto& [worker, parameters] : drained_) {
      GS_CHECK(parameters.size() == model_.parameter_count(),
               "worker " + std::to_string(worker) + " sent a wrong-sized model");
      worst = std::max(worst, relative_max_difference(parameters, model_.parameters()));
    }
    equivalence_difference_ = worst;
    const bool equivalent = worst <= kEquivalenceTolerance;
    char line[256];
    std::snprintf(line, sizeof line,
                  "model equivalence: %d workers, max relative difference %.3e (tolerance %.0e): %s",
                  context_.worker_count(), worst, kEquivalenceTolerance, equivalent ? "OK" : "FAILED");
    core::log_info(line);
    return equivalent;
  }

  void summarize(double cpu_seconds, double wall_seconds, bool equivalent) {
    const auto& total = progress_->total();
    const double bytes_per_step =
        static_cast<double>(total.bytes) / std::max<double>(1, static_cast<double>(total.steps));
    const double dense = 4.0 * static_cast<double>(model_.parameter_count());
    const double cpu_share = cpu_seconds / std::max(wall_seconds, 1e-9);
    const auto duplicates = total.duplicates + static_cast<std::int64_t>(exchange_.stats().duplicates);
    const auto rejected = total.rejected + static_cast<std::int64_t>(exchange_.stats().rejected);
    char line[320];
    std::snprintf(line, sizeof line,
                  "sharing summary: %lld steps, %lld updates, %.1f bytes/worker/step = dense/%.0f, "
                  "back-pressure %lld, duplicates %lld, rejected %lld, master CPU %.1f%% of a core",
                  static_cast<long long>(total.steps), static_cast<long long>(total.messages),
                  bytes_per_step, bytes_per_step > 0 ? dense / bytes_per_step : 0.0,
                  static_cast<long long>(total.backpressure), static_cast<long long>(duplicates),
                  static_cast<long long>(rejected), 100.0 * cpu_share);
    core::log_info(line);
    context_.metrics.write(JsonLine()
                               .add("kind", "sharing_summary")
                               .add("steps", total.steps)
                               .add("updates", total.messages)
                               .add("bytes_per_worker_step", bytes_per_step)
                               .add("dense_bytes", static_cast<std::int64_t>(dense))
                               .add("backpressure", total.backpressure)
                               .add("duplicates", duplicates)
                               .add("rejected", rejected)
                               .add("master_cpu_share", cpu_share)
                               .add("equivalence_max_relative_difference", equivalence_difference_)
                               .add("equivalent", equivalent)
                               .add("conservation_max_relative_error", conservation_error_));
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  comm::ControlPlane& control_;
  nn::Model model_;
  UpdateExchange exchange_;
  data::EpochPlan shape_;
  Checkpointer checkpointer_;
  EpochReporter reporter_;
  std::optional<PartitionScheduler> scheduler_;
  std::optional<SharingProgress> progress_;
  std::vector<std::uint64_t> targets_;  // last seq per origin, from kDone
  std::vector<float> tau_;              // latest threshold per worker (index worker - 1)
  std::map<int, std::vector<float>> drained_;
  int done_ = 0;
  bool drain_sent_ = false;
  bool stopping_ = false;
  bool checkpoint_requested_ = false;
  std::map<int, WorkerState> state_replies_;  // replies to the outstanding state request
  double conservation_error_ = -1;  // worst worker's; -1 when not checked
  double equivalence_difference_ = 0;
};

}  // namespace

int run_sharing_master(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control) {
  return SharingMaster(context, plane, control).run();
}

}  // namespace gradshare::train
