#include "train/allreduce/allreduce_strategy.h"

#include <algorithm>
#include <optional>
#include <cstdio>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "comm/job.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "core/rng.h"
#include "data/epoch_plan.h"
#include "kernels/cpu/elementwise.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/allreduce/protocol.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/epoch_report.h"
#include "train/model_file.h"
#include "train/peak_memory.h"
#include "train/progress.h"
#include "train/replica.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

std::int64_t steps_per_epoch(const RunContext& context, int workers) {
  const auto& cfg = context.config;
  const auto batches = static_cast<std::int64_t>(
      data::EpochPlan(context.data.train.size(), static_cast<std::size_t>(cfg.training.batch_size),
                      static_cast<std::size_t>(cfg.data.partition_batches), 0, 0, false)
          .batch_count());
  return (batches + workers - 1) / workers;
}

// The master evaluates and checkpoints what worker 1 sends; the step fixes the data position.
int run_master(RunContext& context, comm::ControlChannel& control) {
  const auto& cfg = context.config;
  nn::Model model = nn::Model::build(cfg.model, static_cast<std::uint64_t>(cfg.run.seed));
  core::log_info("model: " + std::to_string(model.parameter_count()) + " parameters\n" +
                 model.summary());
  const std::int64_t per_epoch = steps_per_epoch(context, context.worker_count());
  Checkpointer checkpointer(context);
  StartState start;
  std::int64_t first_step = 0;
  if (auto resume = Checkpointer::find_resume(context)) {
    restore_checkpoint(*resume, "checkpoint", model, nullptr);
    start.resume = true;
    start.parameters.assign(model.parameters().begin(), model.parameters().end());
    start.worker.optimizer_step = resume->optimizer_step;
    start.worker.optimizer_state = resume->optimizer_state;
    first_step = resume->iteration;
  }
  for (int w = 1; w <= context.worker_count(); ++w) send(control, w, Start{first_step, start});

  EpochReporter reporter(context);
  auto take_parameters = [&](const std::vector<float>& parameters) {
    GS_CHECK(parameters.size() == model.parameter_count(), "worker 1 sent a wrong-sized model");
    std::copy(parameters.begin(), parameters.end(), model.parameters().begin());
  };
  auto checkpoint = [&](const AllreduceSnapshot& snapshot) {
    auto c = make_checkpoint(context, model, nullptr, snapshot.step,
                             DataPosition{snapshot.step / per_epoch, {}});
    c.optimizer_step = snapshot.state.optimizer_step;
    c.optimizer_state = snapshot.state.optimizer_state;
    checkpointer.write(c);
  };
  for (;;) {
    const auto message = control.receive(1, std::nullopt, "allreduce progress from worker 1");
    switch (message.tag) {
      case AllreduceProgress::kTag: {
        const auto progress = decode<AllreduceProgress>(message);
        core::log_progress(progress.line);
        context.metrics.write(JsonLine()
                                  .add("kind", "step")
                                  .add("step", progress.step)
                                  .add("loss", progress.loss)
                                  .add("train_accuracy", progress.accuracy)
                                  .add("samples_per_second", progress.samples_per_second)
                                  .add("learning_rate", progress.learning_rate)
                                  .add("bytes_per_worker_step",
                                       4.0 * static_cast<double>(model.parameter_count())));
        break;
      }
      case EpochModel::kTag: {
        const auto epoch_model = decode<EpochModel>(message);
        take_parameters(epoch_model.parameters);
        const bool stopping_early = reporter.stop_early();
        reporter.end_of_epoch(model, epoch_model.epoch, epoch_model.step);
        if (reporter.stop_early() && !stopping_early) send(control, 1, Finish{});
        break;
      }
      case AllreduceSnapshot::kTag: {  // a checkpoint is due
        const auto snapshot = decode<AllreduceSnapshot>(message);
        take_parameters(snapshot.parameters);
        checkpoint(snapshot);
        break;
      }
      case Diverged::kTag: {  // nothing more is saved
        const auto diverged = decode<Diverged>(message);
        log_divergence(context, "at step " + std::to_string(diverged.step) + ": " + diverged.reason);
        return core::kExitDiverged;
      }
      case AllreduceFinal::kTag: {
        const auto final_model = decode<AllreduceFinal>(message);
        take_parameters(final_model.parameters);
        PeakMemory peak_memory;
        peak_memory.add(1, final_model.peak_bytes);
        // The other workers end with the same step and send only their peak memory.
        for (int w = 2; w <= context.worker_count(); ++w)
          peak_memory.add(w, receive<PeakMemoryReport>(control, w, "its peak memory at the end").bytes);
        peak_memory.summarize(context);
        if (final_model.stopped) return core::kExitRequeue;
        ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                               make_checkpoint(context, model, nullptr, final_model.step,
                                               DataPosition{cfg.training.epochs, {}}));
        reporter.finish(model);
        return core::kExitOk;
      }
      default:
        throw core::RuntimeError("unexpected " + std::string(comm::tag_name(message.tag)) +
                                 " message from worker 1");
    }
  }
}

int run_worker(RunContext& context, comm::ControlChannel& control, comm::WorkerGroup& workers) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  const int index = workers.index(), count = workers.size();
  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches = static_cast<std::int64_t>(
      data::EpochPlan(train_set.size(), batch_size, cfg.data.partition_batches, seed, 0, false).batch_count());
  const std::int64_t per_epoch = steps_per_epoch(context, count);
  const std::int64_t total_steps = per_epoch * cfg.training.epochs;
  Replica replica(cfg, total_steps, per_epoch, static_cast<std::uint64_t>(context.rank));
  auto& model = replica.model();
  const std::size_t n = model.parameter_count();

  const auto [first_step, start] = receive<Start>(control, 0, "initial model");
  std::int64_t step = first_step;
  if (start.resume) {
    GS_CHECK(start.parameters.size() == n, "the master sent a wrong-sized model");
    std::copy(start.parameters.begin(), start.parameters.end(), model.parameters().begin());
    restore_optimizer(start.worker, replica.optimizer());
  }

  // Gradient scaled by the batch's samples, then samples, loss * samples, correct, and three
  // flags every worker must agree on: stop (a signal arrived), checkpoint (time is due) and
  // finish (the master's kFinish to worker 1: early stopping ends training after this step).
  std::vector<float> reduced(n + 6);
  // A worker other than worker 1 ends by telling the master its peak resident memory (worker
  // 1's comes with the final model).
  auto send_peak_memory = [&] {
    send(control, 0, PeakMemoryReport{core::peak_resident_bytes()});
  };
  bool finish_asked = false;
  ProgressMeter progress(total_steps, step);
  Checkpointer checkpointer(context);
  DivergenceGuard divergence(cfg.training);
  std::optional<data::EpochPlan> plan;
  std::int64_t plan_epoch = -1;
  auto parameters = [&] {
    return std::vector<float>(model.parameters().begin(), model.parameters().end());
  };
  auto send_final = [&](bool stopped) {
    send(control, 0, AllreduceFinal{stopped, step, parameters(), core::peak_resident_bytes()});
  };
  while (step < total_steps) {
    const std::int64_t epoch = step / per_epoch;
    const std::int64_t s = step % per_epoch;
    if (epoch != plan_epoch) {
      plan.emplace(train_set.size(), batch_size, cfg.data.partition_batches, seed, epoch, cfg.data.shuffle);
      plan_epoch = epoch;
      std::vector<std::vector<std::uint32_t>> mine;  // this worker's minibatches of the epoch
      for (std::int64_t b = s * count + index; b < batches; b += count) {
        const auto indices = plan->batch_indices(static_cast<std::size_t>(b));
        mine.emplace_back(indices.begin(), indices.end());
      }
      data::read_ahead(train_set, std::move(mine));
    }
    const std::int64_t b = s * count + index;
    std::fill(reduced.begin(), reduced.end(), 0.0f);
    if (b < batches) {
      const auto result = replica.gradient(train_set, plan->batch_indices(static_cast<std::size_t>(b)));
      const auto samples = static_cast<float>(result.samples);
      kernels::cpu::scale(samples, model.gradients().data(), reduced.data(), n);
      reduced[n] = samples;
      reduced[n + 1] = static_cast<float>(result.loss) * samples;
      reduced[n + 2] = static_cast<float>(result.correct);
    }
    reduced[n + 3] = core::stop_requested() ? 1.0f : 0.0f;
    reduced[n + 4] = index == 0 && checkpointer.due(step) ? 1.0f : 0.0f;
    finish_asked = finish_asked ||
                   (index == 0 && try_receive<Finish>(control, 0).has_value());
    reduced[n + 5] = finish_asked ? 1.0f : 0.0f;
    workers.allreduce_sum(reduced);
    const float total = reduced[n];
    // The all-reduced loss is the same on every worker: all stop together, before the update.
    if (auto reason = divergence.check(step + 1, reduced[n + 1] / total)) {
      if (index == 0) send(control, 0, Diverged{step + 1, *reason});
      return core::kExitDiverged;
    }
    kernels::cpu::divide(reduced.data(), total, n);
    const double learning_rate = replica.compute_update(step, std::span<const float>(reduced.data(), n));
    replica.apply_update();
    ++step;
    progress.record(reduced[n + 1] / total, static_cast<std::int64_t>(reduced[n + 2]),
                    static_cast<std::int64_t>(total));
    const bool stop = reduced[n + 3] > 0;
    const bool epoch_end = step % per_epoch == 0;
    const bool finish = reduced[n + 5] > 0 && !stop;
    if (index != 0) {
      if (stop) {
        send_peak_memory();
        return core::kExitRequeue;
      }
      if (finish) break;
      continue;
    }
    if (step % cfg.logging.every_steps == 0) {
      char extra[96];
      std::snprintf(extra, sizeof extra, "  %.0f B/worker/step (dense all-reduce)",
                    4.0 * static_cast<double>(n));
      send(control, 0,
           AllreduceProgress{step, progress.mean_loss(), progress.accuracy(),
                             progress.samples_per_second(), learning_rate,
                             progress.report(epoch + 1, cfg.training.epochs, s + 1, per_epoch,
                                             step, learning_rate) + extra});
    }
    if (finish) break;  // the final model follows
    if (epoch_end && step < total_steps)
      send(control, 0, EpochModel{epoch + 1, step, parameters()});
    if (stop || reduced[n + 4] > 0 || (epoch_end && checkpointer.at_epoch_end())) {
      send(control, 0,
           AllreduceSnapshot{step, parameters(), capture_worker_state(replica.optimizer(), 0.0f)});
      checkpointer.mark_written(step);
    }
    if (stop) {
      send_final(true);
      return core::kExitRequeue;
    }
  }
  if (index == 0)
    send_final(false);
  else
    send_peak_memory();
  return core::kExitOk;
}

}  // namespace

int run_allreduce(RunContext& context) {
  auto& job = *context.job;
  const auto workers = job.worker_group();
  const auto control =
      job.control_channel(static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  context.phase = RunContext::kTraining;
  const int code = context.is_master() ? run_master(context, *control)
                                       : run_worker(context, *control, *workers);
  if (code == core::kExitRequeue) {
    // mpirun ends the whole job once one rank exits non-zero: nobody leaves before the master
    // has its checkpoint on disk (it returns only after writing it).
    control->flush();
    job.barrier();
  }
  return code;
}

}  // namespace gradshare::train
