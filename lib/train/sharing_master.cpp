// sharing_master.cpp: the gradient-sharing master: hands out partitions, applies and relays
// every update, aggregates the workers' figures, evaluates each finished epoch, drains the job
// and checks that every replica ended with the master's model.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "train/epoch_report.h"
#include "train/gradient_sharing.h"
#include "train/model_file.h"
#include "train/partition_scheduler.h"
#include "train/progress.h"
#include "train/sharing_roles.h"
#include "train/update_exchange.h"
#include "train/worker_report.h"

namespace gradshare::train {

namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

void send_grant(comm::ControlPlane& control, int worker, const std::optional<PartitionGrant>& grant) {
  comm::ByteWriter writer;
  writer.put<std::uint8_t>(grant ? 1 : 0);
  writer.put<std::int64_t>(grant ? grant->epoch : 0);
  writer.put<std::int64_t>(grant ? grant->partition : 0);
  control.send(worker, comm::Tag::kPartitionGrant, writer.bytes());
}

// The periodic progress line: training figures over all workers since the previous line.
class SharingProgress {
 public:
  SharingProgress(RunContext& context, std::int64_t total_steps, std::int64_t steps_per_epoch,
                  std::size_t parameter_count)
      : context_(context), total_steps_(total_steps), steps_per_epoch_(steps_per_epoch),
        dense_bytes_(4.0 * static_cast<double>(parameter_count)) {}

  void add(const WorkerReport& report) {
    window_.add(report);
    total_.add(report);
  }
  std::int64_t steps() const { return total_.steps; }
  const WorkerReport& total() const { return total_; }

  void maybe_log(double relayed_by_master) {
    const auto every = context_.config.logging.every_steps;
    if (total_.steps < next_log_step_) return;
    next_log_step_ = (total_.steps / every + 1) * every;
    const double seconds = window_clock_.seconds();
    const auto& w = window_;
    const double steps = std::max<double>(1, static_cast<double>(w.steps));
    const double bytes_per_step = static_cast<double>(w.bytes) / steps;
    const double ratio = bytes_per_step > 0 ? dense_bytes_ / bytes_per_step : 0.0;
    const double sparsity = w.messages ? w.sparsity_sum / static_cast<double>(w.messages) : 0.0;
    const double done = static_cast<double>(total_.steps);
    const double eta = done > 0 ? run_clock_.seconds() / done *
                                      static_cast<double>(total_steps_ - total_.steps)
                                : 0.0;
    char line[512];
    std::snprintf(line, sizeof line,
                  "epoch %lld/%lld  step %lld/%lld  loss %.4f  acc %.1f%%  %.0f samples/s  "
                  "tau %.2e..%.2e  sparsity %.2e  enc s/b/c %lld/%lld/%lld  "
                  "%.0f B/worker/step (dense/%.0f)  relayed %.0f  back-pressure %lld  ETA %s",
                  static_cast<long long>(std::min<std::int64_t>(
                      total_.steps / std::max<std::int64_t>(steps_per_epoch_, 1) + 1,
                      context_.config.training.epochs)),
                  static_cast<long long>(context_.config.training.epochs),
                  static_cast<long long>(total_.steps), static_cast<long long>(total_steps_),
                  w.loss_sum / steps, 100.0 * static_cast<double>(w.correct) /
                                          std::max<double>(1, static_cast<double>(w.samples)),
                  static_cast<double>(w.samples) / std::max(seconds, 1e-9), w.tau_min, w.tau_max,
                  sparsity, static_cast<long long>(w.sparse_messages),
                  static_cast<long long>(w.bitmap_messages),
                  static_cast<long long>(w.compressed_messages), bytes_per_step, ratio,
                  relayed_by_master + static_cast<double>(w.relayed),
                  static_cast<long long>(w.backpressure), format_duration(eta).c_str());
    core::log_info(line);
    context_.metrics.write(JsonLine()
                               .add("kind", "step")
                               .add("step", total_.steps)
                               .add("loss", w.loss_sum / steps)
                               .add("train_accuracy", static_cast<double>(w.correct) /
                                                          std::max<double>(1, static_cast<double>(w.samples)))
                               .add("samples_per_second", static_cast<double>(w.samples) / std::max(seconds, 1e-9))
                               .add("tau_min", static_cast<double>(w.tau_min))
                               .add("tau_max", static_cast<double>(w.tau_max))
                               .add("sparsity", sparsity)
                               .add("sparse_messages", w.sparse_messages)
                               .add("bitmap_messages", w.bitmap_messages)
                               .add("compressed_messages", w.compressed_messages)
                               .add("bytes_per_worker_step", bytes_per_step)
                               .add("dense_ratio", ratio)
                               .add("backpressure", w.backpressure)
                               .add("duplicates", w.duplicates)
                               .add("wall_seconds", run_clock_.seconds()));
    window_ = WorkerReport{};
    window_clock_.restart();
  }

 private:
  RunContext& context_;
  std::int64_t total_steps_;
  std::int64_t steps_per_epoch_;
  double dense_bytes_;
  WorkerReport window_;
  WorkerReport total_;
  std::int64_t next_log_step_ = 1;
  core::Stopwatch window_clock_;
  core::Stopwatch run_clock_;
};

}  // namespace

int run_sharing_master(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  nn::Model model = nn::Model::build(cfg.model, seed);
  const std::size_t n = model.parameter_count();
  core::log_info("model: " + std::to_string(n) + " parameters\n" + model.summary());
  UpdateExchange exchange(plane, 0, context.size, n);

  const data::EpochPlan shape(context.data.train.size(), static_cast<std::size_t>(cfg.training.batch_size),
                              static_cast<std::size_t>(cfg.data.partition_batches), seed, 0, false);
  const auto steps_per_epoch = static_cast<std::int64_t>(shape.batch_count());
  PartitionScheduler scheduler(cfg.training.epochs, static_cast<std::int64_t>(shape.partition_count()));
  SharingProgress progress(context, steps_per_epoch * cfg.training.epochs, steps_per_epoch, n);
  EpochReporter reporter(context);
  const double cpu_start = process_cpu_seconds();
  core::Stopwatch wall;

  const int workers = context.worker_count();
  std::vector<std::uint64_t> targets(static_cast<std::size_t>(context.size), 0);
  std::map<int, std::vector<float>> drained;
  int done = 0;
  bool drain_sent = false;
  core::Backoff backoff;
  for (;;) {
    bool busy = exchange.poll(model.parameters()) > 0;
    while (auto message = control.try_receive()) {
      busy = true;
      const int worker = message->source;
      switch (message->tag) {
        case comm::Tag::kPartitionRequest: {
          comm::ByteReader reader(message->payload, "partition request");
          if (reader.get<std::uint8_t>() != 0) scheduler.complete(worker);
          send_grant(control, worker, scheduler.next(worker));
          break;
        }
        case comm::Tag::kMetrics:
          progress.add(WorkerReport::deserialize(message->payload));
          break;
        case comm::Tag::kDone: {
          comm::ByteReader reader(message->payload, "done");
          targets[static_cast<std::size_t>(worker)] = reader.get<std::uint64_t>();
          ++done;
          break;
        }
        case comm::Tag::kDrained: {
          comm::ByteReader reader(message->payload, "drained parameters");
          drained[worker] = reader.get_vector<float>();
          break;
        }
        default:
          throw core::RuntimeError("unexpected control message from rank " + std::to_string(worker));
      }
    }
    for (const auto epoch : scheduler.take_completed_epochs())
      reporter.end_of_epoch(model, epoch + 1, progress.steps());
    progress.maybe_log(static_cast<double>(exchange.stats().relayed));

    if (done == workers && !drain_sent) {
      comm::ByteWriter writer;
      writer.put_vector(targets);
      for (int w = 1; w <= workers; ++w) control.send(w, comm::Tag::kDrainTarget, writer.bytes());
      drain_sent = true;
    }
    if (drain_sent && static_cast<int>(drained.size()) == workers && !exchange.has_backlog()) {
      bool complete = true;
      for (int origin = 1; origin <= workers; ++origin)
        complete = complete && exchange.version_vector()[static_cast<std::size_t>(origin)] >=
                                   targets[static_cast<std::size_t>(origin)];
      if (complete) break;
    }
    if (busy) backoff.reset(); else backoff.wait();
  }
  for (int w = 1; w <= workers; ++w) control.send(w, comm::Tag::kShutdown, {});

  double worst = 0;
  for (const auto& [worker, parameters] : drained) {
    GS_CHECK(parameters.size() == n, "worker " + std::to_string(worker) + " sent a wrong-sized model");
    worst = std::max(worst, relative_max_difference(parameters, model.parameters()));
  }
  const bool equivalent = worst <= kEquivalenceTolerance;
  char line[256];
  std::snprintf(line, sizeof line,
                "model equivalence: %d workers, max relative difference %.3e (tolerance %.0e): %s",
                workers, worst, kEquivalenceTolerance, equivalent ? "OK" : "FAILED");
  core::log_info(line);

  const auto& total = progress.total();
  const double bytes_per_step =
      static_cast<double>(total.bytes) / std::max<double>(1, static_cast<double>(total.steps));
  const double cpu_share = (process_cpu_seconds() - cpu_start) / std::max(wall.seconds(), 1e-9);
  std::snprintf(line, sizeof line,
                "sharing summary: %lld steps, %lld updates, %.1f bytes/worker/step = dense/%.0f, "
                "back-pressure %lld, duplicates %lld, rejected %lld, master CPU %.1f%% of a core",
                static_cast<long long>(total.steps), static_cast<long long>(total.messages),
                bytes_per_step, bytes_per_step > 0 ? 4.0 * static_cast<double>(n) / bytes_per_step : 0.0,
                static_cast<long long>(total.backpressure),
                static_cast<long long>(total.duplicates + static_cast<std::int64_t>(exchange.stats().duplicates)),
                static_cast<long long>(total.rejected + static_cast<std::int64_t>(exchange.stats().rejected)),
                100.0 * cpu_share);
  core::log_info(line);
  context.metrics.write(JsonLine()
                            .add("kind", "sharing_summary")
                            .add("steps", total.steps)
                            .add("updates", total.messages)
                            .add("bytes_per_worker_step", bytes_per_step)
                            .add("dense_bytes", static_cast<std::int64_t>(4 * n))
                            .add("backpressure", total.backpressure)
                            .add("duplicates", total.duplicates + static_cast<std::int64_t>(exchange.stats().duplicates))
                            .add("rejected", total.rejected + static_cast<std::int64_t>(exchange.stats().rejected))
                            .add("master_cpu_share", cpu_share)
                            .add("equivalence_max_relative_difference", worst)
                            .add("equivalent", equivalent));
  ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                         make_checkpoint(context, model, nullptr, total.steps, scheduler.position()));
  reporter.finish(model);
  if (!equivalent) throw core::RuntimeError("replicas diverged: model-equivalence check failed");
  return 0;
}

}  // namespace gradshare::train
