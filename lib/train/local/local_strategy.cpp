#include "train/local/local_strategy.h"

#include <optional>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/stop_signal.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "runtime/checkpointer.h"
#include "runtime/divergence_guard.h"
#include "runtime/epoch_report.h"
#include "train/master_loop.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "runtime/partition_scheduler.h"
#include "runtime/peak_memory.h"
#include "report/progress.h"
#include "train/replica.h"
#include "train/sharing/update_recorder.h"

namespace gradshare::train {

namespace {

// The progress line and the "step" metrics record after `step`, minibatch `in_epoch` of `epoch`.
void log_step(runtime::RunContext& context, report::ProgressMeter& progress, std::int64_t epoch,
              std::int64_t in_epoch, std::int64_t batches_per_epoch, std::int64_t step,
              double learning_rate) {
  const double samples_per_second = progress.samples_per_second();
  const double loss = progress.mean_loss();
  const double accuracy = progress.accuracy();
  core::log_progress(progress.report(epoch, context.config.training.epochs, in_epoch,
                                     batches_per_epoch, step, learning_rate));
  context.metrics.write(report::JsonLine()
                            .add("kind", "step")
                            .add("epoch", epoch)
                            .add("step", step)
                            .add("loss", loss)
                            .add("train_accuracy", accuracy)
                            .add("samples_per_second", samples_per_second)
                            .add("learning_rate", learning_rate));
}

}  // namespace

int run_local(runtime::RunContext& context) {
  context.begin_training();
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto partition_batches = static_cast<std::size_t>(cfg.data.partition_batches);
  const data::EpochPlan shape(train_set.size(), batch_size, partition_batches, seed, 0, false);
  const auto batches_per_epoch = static_cast<std::int64_t>(shape.batch_count());
  const auto total_steps = batches_per_epoch * cfg.training.epochs;
  Replica replica(cfg, total_steps, batches_per_epoch, /*dropout_substream=*/0);
  auto& model = replica.model();
  auto* optimizer = &replica.optimizer();
  auto& dropout_rng = replica.dropout_rng();
  runtime::log_model(model);

  runtime::Checkpointer checkpointer(context);
  std::int64_t step = 0;
  runtime::DataPosition start;
  if (auto resume = runtime::Checkpointer::find_resume(context)) {
    runtime::restore_checkpoint(*resume, "checkpoint", model, optimizer);
    step = resume->iteration;
    start = runtime::data_position(*resume);
    dropout_rng.set_state(resume->rng_state);
  }
  runtime::PartitionScheduler scheduler(cfg.training.epochs,
                                        static_cast<std::int64_t>(shape.partition_count()), start,
                                        shape.partition_sizes(), cfg.data.prefetch_partitions);
  runtime::PartitionData partitions(train_set, batch_size, partition_batches, seed,
                                    cfg.data.shuffle);

  UpdateRecorder recorder(model.parameter_count());
  report::ProgressMeter progress(total_steps, step);
  runtime::EpochReporter reporter(context);
  auto checkpoint = [&] {
    auto c = runtime::make_checkpoint(context, model, optimizer, step, scheduler.position());
    c.rng_state = dropout_rng.state();
    checkpointer.write(c);
  };

  runtime::DivergenceGuard divergence(cfg.training, cfg.model.num_classes);
  for (auto assigned = scheduler.assign(1); assigned.grant; assigned = scheduler.assign(1)) {
    const auto& grant = assigned.grant;
    partitions.read_ahead(*grant, assigned.read_ahead);
    const auto& plan = partitions.plan(grant->epoch);
    const auto range = plan.partition(static_cast<std::size_t>(grant->partition));
    for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
      const auto result = replica.gradient(train_set, plan.batch_indices(b));
      if (auto reason = divergence.check(step + 1, result.loss)) {
        runtime::log_divergence(context, "at step " + std::to_string(step + 1) + ": " + *reason);
        return core::kExitDiverged;  // the diverged model is never saved
      }
      const double learning_rate =
          replica.compute_update(grant->epoch * batches_per_epoch + static_cast<std::int64_t>(b));
      recorder.record(replica.update());
      replica.apply_update();
      progress.record(result.loss, result.correct, result.samples);
      ++step;
      if (step % cfg.logging.every_steps == 0)
        log_step(context, progress, grant->epoch + 1, static_cast<std::int64_t>(b + 1),
                 batches_per_epoch, step, learning_rate);
    }
    scheduler.complete(1);
    const auto finished = scheduler.take_completed_epochs();
    for (const auto epoch : finished)
      reporter.end_of_epoch(model, epoch + 1, step, scheduler.minibatches_in(epoch));
    if (reporter.stop_early()) break;
    if (core::stop_requested()) {
      runtime::log_stop_request("stopping after a checkpoint", false, *context.job);
      checkpoint();
      return core::kExitRequeue;
    }
    if ((!finished.empty() && checkpointer.at_epoch_end()) || checkpointer.due(step)) checkpoint();
  }
  write_final_model(context, model, reporter, [&] {
    return runtime::make_checkpoint(context, model, optimizer, step, scheduler.position());
  });
  runtime::PeakMemory().summarize(context);
  return 0;
}

}  // namespace gradshare::train
