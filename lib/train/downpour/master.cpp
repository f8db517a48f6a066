// downpour/master.cpp: the Downpour master (rank 0): serves shard 0, hands out partitions,
// aggregates the workers' figures, evaluates the servers' model at the end of every epoch,
// writes checkpoints (downpour_checkpoint.h), stops the job on a signal, and at the end checks
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
#include "train/model_file.h"
#include "train/peak_memory.h"
#include "train/poll_during.h"
#include "train/partition_scheduler.h"
#include "train/progress.h"
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

// A checkpoint needs what other ranks hold (downpour_checkpoint.h): the master asks every rank
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


}  // namespace

int run_downpour_master(RunContext& context, nn::Model& model, DownpourTransport& transport,
                        comm::ControlChannel& control, const DownpourLayout& layout,
                        ShardServer& server, const std::optional<ckpt::Checkpoint>& resume) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  const std::size_t n = model.parameter_count();
  const int workers = layout.workers();
  const double timeout = control.timeout_seconds();
  core::log_info("model: " + std::to_string(n) + " parameters\n" + model.summary());
  char line[512];
  std::snprintf(line, sizeof line,
                "downpour: %d parameter server%s (shards of %zu..%zu parameters), %d workers, "
                "push every %lld steps, pull every %lld, server optimizer %s lr %g (%s), pushes %s",
                layout.servers(), layout.servers() == 1 ? "" : "s",
                layout.shard(layout.servers() - 1).size(), layout.shard(0).size(), workers,
                static_cast<long long>(cfg.downpour.n_push),
                static_cast<long long>(cfg.downpour.n_pull), cfg.downpour.server_optimizer.c_str(),
                cfg.downpour.server_learning_rate,
                cfg.downpour.combine == "mean" ? "divided by the workers" : "pushes summed",
                cfg.downpour.encode ? "encoded" : "dense");
  core::log_info(line);

  // The servers' model: shard 0 here, the others read through the transport (serving shard 0
  // while it waits). Returns the sum of the shard versions (pushes applied over all shards).
  auto read_servers = [&] {
    auto parameters = model.parameters();
    const auto own = server.parameters();
    std::copy(own.begin(), own.end(),
              parameters.begin() + static_cast<std::ptrdiff_t>(layout.shard(0).begin));
    std::uint64_t versions = server.version();
    for (int s = 1; s < layout.servers(); ++s)
      versions +=
          transport.read_shard(s, parameters.subspan(layout.shard(s).begin, layout.shard(s).size()),
                               timeout, [&] { server.poll(); });
    return versions;
  };

  const data::EpochPlan shape(context.data.train.size(),
                              static_cast<std::size_t>(cfg.training.batch_size),
                              static_cast<std::size_t>(cfg.data.partition_batches), seed, 0, false);
  const auto steps_per_epoch = static_cast<std::int64_t>(shape.batch_count());
  const std::int64_t first_step = resume ? resume->iteration : 0;
  PartitionScheduler scheduler(cfg.training.epochs,
                               static_cast<std::int64_t>(shape.partition_count()),
                               resume ? data_position(*resume) : DataPosition{},
                               shape.partition_sizes(), cfg.data.prefetch_partitions);
  DownpourProgress progress(context, steps_per_epoch, workers, first_step);
  EpochReporter reporter(context);
  Checkpointer checkpointer(context);
  checkpointer.mark_written(first_step);
  StateRequests requests(control);
  auto write_checkpoint = [&](const std::map<int, WorkerState>& replies) {
    read_servers();
    auto c = make_checkpoint(context, model, nullptr, progress.step(), scheduler.position());
    std::vector<WorkerState> shards{capture_worker_state(server.optimizer(), 0.0f)};
    for (int s = 1; s < layout.servers(); ++s) shards.push_back(replies.at(s));
    put_server_state(c, shards, layout);
    for (int w = 0; w < workers; ++w) {
      const auto& state = replies.at(layout.worker_rank(w));
      c.worker_optimizers.push_back({state.optimizer_step, state.optimizer_state});
    }
    poll_during([&] { checkpointer.write(c); }, [&] { return server.poll(); });
  };
  std::map<int, std::vector<float>> drained;
  PeakMemory peak_memory;
  int done = 0;
  bool pull_signalled = false;
  bool stopping = false;
  bool diverged = false;  // a worker's divergence guard fired: no partition more, nothing saved
  // `why`: a worker's stop notice; empty: this rank's own stop signal.
  auto stop = [&](const std::string& why) {
    if (stopping) return;
    const std::string plan = "finishing the partitions in flight before the stop checkpoint";
    if (why.empty()) log_stop_request(plan, true); else core::log_warn(why + ": " + plan);
    stopping = true;
  };
  core::Backoff backoff;
  core::Deadline deadline(timeout);
  while (static_cast<int>(drained.size()) < workers) {
    bool busy = server.poll() > 0;
    if (core::stop_requested()) stop("");
    while (auto message = control.try_receive()) {
      busy = true;
      const int worker = message->source;
      switch (message->tag) {
        case PartitionRequest::kTag:
          if (decode<PartitionRequest>(*message).finished_previous) scheduler.complete(worker);
          send(control, worker,
               PartitionGrantReply{stopping || diverged || reporter.stop_early()
                                       ? PartitionAssignment{}
                                       : scheduler.assign(worker)});
          break;
        case DownpourState::kTag:
          if (requests.take(*message)) write_checkpoint(requests.collect());
          break;
        case Diverged::kTag: {
          const auto report = decode<Diverged>(*message);
          if (!diverged)
            log_divergence(context, "on rank " + std::to_string(worker) + " at its step " +
                                        std::to_string(report.step) + ": " + report.reason);
          diverged = true;
          break;
        }
        case Shutdown::kTag:  // a stop signal arrived at another rank
          stop("rank " + std::to_string(worker) + " received a stop signal (exit code " +
               std::to_string(decode<Shutdown>(*message).exit_code) + " asked)");
          break;
        case DownpourReport::kTag:
          progress.add(decode<DownpourReport>(*message));
          break;
        case DownpourDone::kTag: {
          const auto worker_done = decode<DownpourDone>(*message);
          progress.add(worker_done.report);
          peak_memory.add(worker, worker_done.peak_bytes);
          ++done;
          break;
        }
        case DownpourFinalModel::kTag:
          drained[worker] = decode<DownpourFinalModel>(*message).parameters;
          break;
        default:
          throw core::RuntimeError(std::string("unexpected ") + comm::tag_name(message->tag) +
                                   " message from rank " + std::to_string(worker));
      }
    }
    bool checkpoint_due =
        !stopping && !diverged && !pull_signalled && checkpointer.due(progress.step());
    for (const auto epoch : scheduler.take_completed_epochs()) {
      read_servers();
      const auto minibatches = scheduler.minibatches_in(epoch);
      poll_during([&] { reporter.end_of_epoch(model, epoch + 1, progress.step(), minibatches); },
                  [&] { return server.poll(); });
      checkpoint_due = checkpoint_due || (checkpointer.at_epoch_end() && !stopping && !diverged &&
                                          epoch + 1 < cfg.training.epochs);
    }
    if (checkpoint_due && !requests.outstanding()) requests.request();
    progress.maybe_log();
    if (done == workers && !pull_signalled) {
      // Every worker's last push is applied on every shard: the servers are quiet from here on.
      for (int w = 0; w < workers; ++w) send(control, layout.worker_rank(w), DownpourFinalPull{});
      pull_signalled = true;
    }
    if (busy) {
      backoff.reset();
      deadline = core::Deadline(timeout);
    } else {
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout) +
                                 " s without a push or a message from any worker (" +
                                 std::to_string(done) + " of " + std::to_string(workers) +
                                 " finished, " + std::to_string(drained.size()) + " pulled)");
      backoff.wait();
    }
  }

  const std::uint64_t versions = read_servers();
  Comparison worst;
  for (const auto& [worker, parameters] : drained) {
    const Comparison c = compare(parameters, model.parameters());
    worst.identical = worst.identical && c.identical;
    worst.max_difference = std::max(worst.max_difference, c.max_difference);
  }
  std::snprintf(line, sizeof line,
                "downpour consistency: after the last push and a final pull, %d workers hold the "
                "servers' parameters %s (max |difference| %.3e): %s",
                workers, worst.identical ? "bit for bit" : "NOT exactly", worst.max_difference,
                worst.identical ? "OK" : "FAILED");
  core::log_info(line);

  const auto& total = progress.total();
  const double steps = static_cast<double>(total.steps);
  const double push_bytes = ratio(static_cast<double>(total.push_bytes), steps);
  const double pull_bytes = ratio(static_cast<double>(total.pull_bytes), steps);
  std::snprintf(line, sizeof line,
                "downpour summary: %lld steps, %lld pushes (%llu applied over %d shards, %lld "
                "postponed), %lld pulls (%lld retried), staleness mean %.2f max %lld, "
                "%.0f B/worker/step (push %.0f + pull %.0f)",
                static_cast<long long>(total.steps), static_cast<long long>(total.pushes),
                static_cast<unsigned long long>(versions), layout.servers(),
                static_cast<long long>(total.busy_slots), static_cast<long long>(total.pulls),
                static_cast<long long>(total.pull_retries), total.ages ? mean_age(total) : 0.0,
                static_cast<long long>(total.age_max), push_bytes + pull_bytes, push_bytes,
                pull_bytes);
  core::log_info(line);
  context.metrics.write(JsonLine()
                            .add("kind", "downpour_summary")
                            .add("steps", total.steps)
                            .add("servers", layout.servers())
                            .add("workers", workers)
                            .add("encode", cfg.downpour.encode)
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
                            .add("dense_bytes", static_cast<std::int64_t>(4 * n))
                            .add("consistency_max_difference", worst.max_difference)
                            .add("consistent", worst.identical));
  // The other servers' peak memory: they are quiet now, and answer before their shutdown.
  for (int s = 1; s < layout.servers(); ++s) send(control, s, PeakMemoryRequest{});
  for (int s = 1; s < layout.servers(); ++s)
    peak_memory.add(s, receive<PeakMemoryReport>(control, s, "its peak memory").bytes);
  peak_memory.summarize(context);
  // A stop checkpoints here: every worker's updates are applied and the servers are quiet. An
  // outstanding request is completed too, so that no reply is left unreceived.
  // A diverged model is never saved (an outstanding request is still collected).
  if (diverged) {
    if (requests.outstanding()) requests.collect();
  } else if (stopping || requests.outstanding()) {
    write_checkpoint(requests.collect());
  }
  const int exit_code =
      diverged ? core::kExitDiverged : stopping ? core::kExitRequeue : core::kExitOk;
  if (diverged) {
    core::log_info("ended after the divergence; the newest checkpoint is the newest good one");
  } else if (stopping) {
    core::log_info("stopped after the checkpoint; exiting with " + std::to_string(exit_code) +
                   " (requeue me)");
  } else {
    ckpt::write_checkpoint(
        context.run_directory.file("model.h5"),
        make_checkpoint(context, model, nullptr, progress.step(), scheduler.position()));
    reporter.finish(model);
  }
  for (int rank = 1; rank < context.size; ++rank)
    send(control, rank, Shutdown{exit_code});
  control.flush();
  if (!worst.identical && !diverged)  // (NaNs compare unequal)
    throw core::RuntimeError("downpour: a worker's final parameters differ from the servers'");
  return exit_code;
}

}  // namespace gradshare::train
