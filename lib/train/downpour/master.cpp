// downpour/master.cpp: the Downpour master (rank 0): serves shard 0, hands out partitions,
// aggregates the workers' figures, evaluates the servers' model at the end of every epoch,
// writes checkpoints (downpour/checkpoint.h), stops the job on a signal, and at the end checks
// that every worker's final pull returned exactly the servers' parameters. Shard 0 is served
// wherever the master waits: between messages, while it reads the other shards, and while it
// evaluates or writes a checkpoint (on a second thread then).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/roles.h"
#include "train/epoch_report.h"
#include "train/master_loop.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "train/peak_memory.h"
#include "train/poll_during.h"
#include "train/partition_scheduler.h"
#include "report/progress.h"
#include "train/progress_window.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// Staleness is undefined (null in metrics.jsonl) while no push has been acknowledged.
double mean_age(const DownpourReport& report) {
  return report.ages > 0 ? report.age_sum / static_cast<double>(report.ages) : NAN;
}

// The master's periodic progress line and "step" metrics record.
class DownpourProgress {
 public:
  DownpourProgress(RunContext& context, std::int64_t steps_per_epoch, int workers,
                   std::int64_t first_step)
      : context_(context), window_(context, steps_per_epoch, workers, first_step) {}

  void add(const DownpourReport& report) { window_.add(report); }
  const DownpourReport& total() const { return window_.total(); }
  // Steps of the whole run, those before a resume included.
  std::int64_t step() const { return window_.step(); }

  void maybe_log() {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double steps = static_cast<double>(w.steps);
    const double push_bytes = ratio(static_cast<double>(w.push_bytes), steps);
    const double pull_bytes = ratio(static_cast<double>(w.pull_bytes), steps);
    char line[448];
    std::snprintf(line, sizeof line,
                  "%s  staleness mean %.1f max %lld  pushes %lld (postponed %lld)  pulls %lld "
                  "(retried %lld)  %.0f B/worker/step (push %.0f + pull %.0f)  %s",
                  window_.head().c_str(), w.ages ? mean_age(w) : 0.0,
                  static_cast<long long>(w.age_max), static_cast<long long>(w.pushes),
                  static_cast<long long>(w.busy_slots), static_cast<long long>(w.pulls),
                  static_cast<long long>(w.pull_retries), push_bytes + pull_bytes, push_bytes,
                  pull_bytes, window_.eta().c_str());
    core::log_progress(line);
    context_.metrics.write(window_.record()
                               .add("bytes_per_worker_step", push_bytes + pull_bytes)
                               .add("push_bytes_per_worker_step", push_bytes)
                               .add("pull_bytes_per_worker_step", pull_bytes)
                               .add("staleness_mean", mean_age(w))
                               .add("staleness_max", w.ages ? w.age_max : std::int64_t{0})
                               .add("pushes", w.pushes)
                               .add("pushes_postponed", w.busy_slots)
                               .add("pulls", w.pulls)
                               .add("pull_retries", w.pull_retries));
    window_.next_window();
  }

 private:
  RunContext& context_;
  ProgressWindow<DownpourReport> window_;
};

// A checkpoint needs what other ranks hold (downpour/checkpoint.h): the master asks every rank
// and collects the replies; several requests are never outstanding at once.
class StateRequests {
 public:
  explicit StateRequests(comm::ControlChannel& control) : control_(control) {}
  bool outstanding() const { return outstanding_; }
  void request() {
    GS_CHECK(!outstanding_, "a state request is already outstanding");
    for (int rank = 1; rank < control_.size(); ++rank) send(control_, rank, StateRequest{});
    outstanding_ = true;
  }
  // Takes one reply; true when every rank has replied.
  bool take(const comm::ControlMessage& reply) {
    if (!outstanding_ || replies_.count(reply.source))
      throw core::RuntimeError("unrequested state reply from rank " + std::to_string(reply.source));
    replies_[reply.source] = decode<DownpourState>(reply).state;
    return static_cast<int>(replies_.size()) == control_.size() - 1;
  }
  // Every rank's reply (requesting first when nothing is outstanding), waiting for the rest.
  std::map<int, WorkerState> collect() {
    if (!outstanding_) request();
    for (int rank = 1; rank < control_.size(); ++rank)
      if (!replies_.count(rank))
        replies_[rank] = receive<DownpourState>(control_, rank, "state for a checkpoint").state;
    outstanding_ = false;
    std::map<int, WorkerState> replies;
    replies.swap(replies_);
    return replies;
  }

 private:
  comm::ControlChannel& control_;
  std::map<int, WorkerState> replies_;
  bool outstanding_ = false;
};

// Largest |a - b| and whether the two are bit-identical.
struct Comparison {
  double max_difference = 0;
  bool identical = true;
};
Comparison compare(std::span<const float> a, std::span<const float> b) {
  Comparison result;
  if (a.size() != b.size()) return {INFINITY, false};
  result.identical = std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    result.max_difference =
        std::max(result.max_difference, std::fabs(static_cast<double>(a[i]) - b[i]));
  return result;
}


class DownpourMaster : public MasterRole {
 public:
  DownpourMaster(RunContext& context, nn::Model& model, DownpourTransport& transport,
                 comm::ControlChannel& control, const DownpourLayout& layout, ShardServer& server,
                 const std::optional<ckpt::Checkpoint>& resume)
      : context_(context), cfg_(context.config), model_(model), transport_(transport),
        control_(control), layout_(layout), server_(server), workers_(layout.workers()),
        shape_(epoch_shape(cfg_, context.data.train)),
        scheduler_(cfg_.training.epochs, static_cast<std::int64_t>(shape_.partition_count()),
                   resume ? data_position(*resume) : DataPosition{}, shape_.partition_sizes(),
                   cfg_.data.prefetch_partitions),
        progress_(context, static_cast<std::int64_t>(shape_.batch_count()), workers_,
                  resume ? resume->iteration : 0),
        reporter_(context), checkpointer_(context), requests_(control) {
    checkpointer_.mark_written(resume ? resume->iteration : 0);
    log_setup();
  }

  // `why`: a worker's stop notice; empty: this rank's own stop signal.
  void on_stop_signal() override { stop(""); }

  std::optional<int> handle(const comm::ControlMessage& message) override {
    const int worker = message.source;
    switch (message.tag) {
      case PartitionRequest::kTag:
        if (decode<PartitionRequest>(message).finished_previous) scheduler_.complete(worker);
        send(control_, worker,
             PartitionGrantReply{stopping_ || diverged_ || reporter_.stop_early()
                                     ? PartitionAssignment{}
                                     : scheduler_.assign(worker)});
        break;
      case DownpourState::kTag:
        if (requests_.take(message)) write_checkpoint(requests_.collect());
        break;
      case Diverged::kTag: {
        const auto report = decode<Diverged>(message);
        if (!diverged_)
          log_divergence(context_, "on rank " + std::to_string(worker) + " at its step " +
                                       std::to_string(report.step) + ": " + report.reason);
        diverged_ = true;
        break;
      }
      case Shutdown::kTag:  // a stop signal arrived at another rank
        stop("rank " + std::to_string(worker) + " received a stop signal (exit code " +
             std::to_string(decode<Shutdown>(message).exit_code) + " asked)");
        break;
      case DownpourReport::kTag:
        progress_.add(decode<DownpourReport>(message));
        break;
      case DownpourDone::kTag: {
        const auto worker_done = decode<DownpourDone>(message);
        progress_.add(worker_done.report);
        peak_memory_.add(worker, worker_done.peak_bytes);
        ++done_;
        break;
      }
      case DownpourFinalModel::kTag:
        drained_[worker] = decode<DownpourFinalModel>(message).parameters;
        break;
      default:
        unexpected_message(message);
    }
    return std::nullopt;
  }

  // Serves shard 0; evaluates finished epochs, asks for due checkpoints, logs progress, and
  // once every worker's last push is in, signals the final pull.
  bool poll() override {
    const bool busy = server_.poll() > 0;
    bool checkpoint_due =
        !stopping_ && !diverged_ && !pull_signalled_ && checkpointer_.due(progress_.step());
    for (const auto epoch : scheduler_.take_completed_epochs()) {
      read_servers();
      const auto minibatches = scheduler_.minibatches_in(epoch);
      poll_during(
          [&] { reporter_.end_of_epoch(model_, epoch + 1, progress_.step(), minibatches); },
          [&] { return server_.poll(); });
      checkpoint_due = checkpoint_due || (checkpointer_.at_epoch_end() && !stopping_ &&
                                          !diverged_ && epoch + 1 < cfg_.training.epochs);
    }
    if (checkpoint_due && !requests_.outstanding()) requests_.request();
    progress_.maybe_log();
    if (done_ == workers_ && !pull_signalled_) {
      // Every worker's last push is applied on every shard: the servers are quiet from here on.
      for (int w = 0; w < workers_; ++w) send(control_, layout_.worker_rank(w), DownpourFinalPull{});
      pull_signalled_ = true;
    }
    return busy;
  }

  std::optional<int> finished() override {
    if (static_cast<int>(drained_.size()) < workers_) return std::nullopt;
    return finish();
  }

  std::string awaited() const override {
    return "a push or a message from any worker (" + std::to_string(done_) + " of " +
           std::to_string(workers_) + " finished, " + std::to_string(drained_.size()) +
           " pulled)";
  }

 private:
  void log_setup() {
    core::log_info("model: " + std::to_string(model_.parameter_count()) + " parameters\n" +
                   model_.summary());
    char line[512];
    std::snprintf(
        line, sizeof line,
        "downpour: %d parameter server%s (shards of %zu..%zu parameters), %d workers, "
        "push every %lld steps, pull every %lld, server optimizer %s lr %g (%s), pushes %s",
        layout_.servers(), layout_.servers() == 1 ? "" : "s",
        layout_.shard(layout_.servers() - 1).size(), layout_.shard(0).size(), workers_,
        static_cast<long long>(cfg_.downpour.n_push), static_cast<long long>(cfg_.downpour.n_pull),
        cfg_.downpour.server_optimizer.c_str(), cfg_.downpour.server_learning_rate,
        cfg_.downpour.combine == "mean" ? "divided by the workers" : "pushes summed",
        cfg_.downpour.encode ? "encoded" : "dense");
    core::log_info(line);
  }

  void stop(const std::string& why) {
    if (stopping_) return;
    const std::string plan = "finishing the partitions in flight before the stop checkpoint";
    if (why.empty()) log_stop_request(plan, true, *context_.job); else core::log_warn(why + ": " + plan);
    stopping_ = true;
  }

  // The servers' model: shard 0 here, the others read through the transport (serving shard 0
  // while it waits). Returns the sum of the shard versions (pushes applied over all shards).
  std::uint64_t read_servers() {
    auto parameters = model_.parameters();
    const auto own = server_.parameters();
    std::copy(own.begin(), own.end(),
              parameters.begin() + static_cast<std::ptrdiff_t>(layout_.shard(0).begin));
    std::uint64_t versions = server_.version();
    for (int s = 1; s < layout_.servers(); ++s)
      versions += transport_.read_shard(
          s, parameters.subspan(layout_.shard(s).begin, layout_.shard(s).size()),
          control_.timeout_seconds(), [&] { server_.poll(); });
    return versions;
  }

  void write_checkpoint(const std::map<int, WorkerState>& replies) {
    read_servers();
    auto c = make_checkpoint(context_, model_, nullptr, progress_.step(), scheduler_.position());
    std::vector<WorkerState> shards{capture_worker_state(server_.optimizer(), 0.0f)};
    for (int s = 1; s < layout_.servers(); ++s) shards.push_back(replies.at(s));
    put_server_state(c, shards, layout_);
    for (int w = 0; w < workers_; ++w) {
      const auto& state = replies.at(layout_.worker_rank(w));
      c.worker_optimizers.push_back({state.optimizer_step, state.optimizer_state});
    }
    poll_during([&] { checkpointer_.write(c); }, [&] { return server_.poll(); });
  }

  // Every worker pulled at the end: the consistency check, the summary, the servers' peak
  // memory, then the stop's checkpoint or model.h5, and every rank's shutdown.
  int finish() {
    const std::uint64_t versions = read_servers();
    Comparison worst;
    for (const auto& [worker, parameters] : drained_) {
      const Comparison c = compare(parameters, model_.parameters());
      worst.identical = worst.identical && c.identical;
      worst.max_difference = std::max(worst.max_difference, c.max_difference);
    }
    summarize(versions, worst);
    // The other servers' peak memory: they are quiet now, and answer before their shutdown.
    for (int s = 1; s < layout_.servers(); ++s) send(control_, s, PeakMemoryRequest{});
    for (int s = 1; s < layout_.servers(); ++s)
      peak_memory_.add(s, receive<PeakMemoryReport>(control_, s, "its peak memory").bytes);
    peak_memory_.summarize(context_);
    // A stop checkpoints here: every worker's updates are applied and the servers are quiet.
    // An outstanding request is completed too, so that no reply is left unreceived. A
    // diverged model is never saved (an outstanding request is still collected).
    if (diverged_) {
      if (requests_.outstanding()) requests_.collect();
    } else if (stopping_ || requests_.outstanding()) {
      write_checkpoint(requests_.collect());
    }
    const int exit_code =
        diverged_ ? core::kExitDiverged : stopping_ ? core::kExitRequeue : core::kExitOk;
    if (diverged_) {
      core::log_info("ended after the divergence; the newest checkpoint is the newest good one");
    } else if (stopping_) {
      core::log_info("stopped after the checkpoint; exiting with " + std::to_string(exit_code) +
                     " (requeue me)");
    } else {
      write_final_model(context_, model_, progress_.step(), scheduler_.position(), reporter_);
    }
    for (int rank = 1; rank < context_.size; ++rank) send(control_, rank, Shutdown{exit_code});
    control_.flush();
    if (!worst.identical && !diverged_)  // (NaNs compare unequal)
      throw core::RuntimeError("downpour: a worker's final parameters differ from the servers'");
    return exit_code;
  }

  void summarize(std::uint64_t versions, const Comparison& worst) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "downpour consistency: after the last push and a final pull, %d workers hold "
                  "the servers' parameters %s (max |difference| %.3e): %s",
                  workers_, worst.identical ? "bit for bit" : "NOT exactly",
                  worst.max_difference, worst.identical ? "OK" : "FAILED");
    core::log_info(line);
    const auto& total = progress_.total();
    const double steps = static_cast<double>(total.steps);
    const double push_bytes = ratio(static_cast<double>(total.push_bytes), steps);
    const double pull_bytes = ratio(static_cast<double>(total.pull_bytes), steps);
    std::snprintf(line, sizeof line,
                  "downpour summary: %lld steps, %lld pushes (%llu applied over %d shards, %lld "
                  "postponed), %lld pulls (%lld retried), staleness mean %.2f max %lld, "
                  "%.0f B/worker/step (push %.0f + pull %.0f)",
                  static_cast<long long>(total.steps), static_cast<long long>(total.pushes),
                  static_cast<unsigned long long>(versions), layout_.servers(),
                  static_cast<long long>(total.busy_slots), static_cast<long long>(total.pulls),
                  static_cast<long long>(total.pull_retries), total.ages ? mean_age(total) : 0.0,
                  static_cast<long long>(total.age_max), push_bytes + pull_bytes, push_bytes,
                  pull_bytes);
    core::log_info(line);
    context_.metrics.write(
        report::JsonLine()
            .add("kind", "downpour_summary")
            .add("steps", total.steps)
            .add("servers", layout_.servers())
            .add("workers", workers_)
            .add("encode", cfg_.downpour.encode)
            .add("pushes", total.pushes)
            .add("pushes_applied", static_cast<std::int64_t>(versions))
            .add("pushes_postponed", total.busy_slots)
            .add("pulls", total.pulls)
            .add("pull_retries", total.pull_retries)
            .add("staleness_mean", mean_age(total))
            .add("staleness_max", total.age_max)
            .add("acknowledged_pushes", total.ages)
            .add("bytes_per_worker_step", push_bytes + pull_bytes)
            .add("push_bytes_per_worker_step", push_bytes)
            .add("pull_bytes_per_worker_step", pull_bytes)
            .add("dense_bytes", static_cast<std::int64_t>(4 * model_.parameter_count()))
            .add("consistency_max_difference", worst.max_difference)
            .add("consistent", worst.identical));
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  nn::Model& model_;
  DownpourTransport& transport_;
  comm::ControlChannel& control_;
  const DownpourLayout& layout_;
  ShardServer& server_;
  int workers_;
  data::EpochPlan shape_;
  PartitionScheduler scheduler_;
  DownpourProgress progress_;
  EpochReporter reporter_;
  Checkpointer checkpointer_;
  StateRequests requests_;
  std::map<int, std::vector<float>> drained_;
  PeakMemory peak_memory_;
  int done_ = 0;
  bool pull_signalled_ = false;
  bool stopping_ = false;
  bool diverged_ = false;  // a worker's divergence guard fired: no partition more, nothing saved
};

}  // namespace

int run_downpour_master(RunContext& context, nn::Model& model, DownpourTransport& transport,
                        comm::ControlChannel& control, const DownpourLayout& layout,
                        ShardServer& server, const std::optional<ckpt::Checkpoint>& resume) {
  DownpourMaster master(context, model, transport, control, layout, server, resume);
  return MasterLoop(control).run(master);
}

}  // namespace gradshare::train
