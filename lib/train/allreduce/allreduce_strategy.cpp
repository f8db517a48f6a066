#include "train/allreduce/allreduce_strategy.h"

#include <mpi.h>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "comm/control_channel.h"
#include "comm/mpi_control_channel.h"
#include "comm/mpi_error.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "core/rng.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/epoch_report.h"
#include "train/model_file.h"
#include "train/peak_memory.h"
#include "train/progress.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// Worker 1 -> master messages.
void send_parameters(comm::ControlChannel& control, comm::Tag tag, std::int64_t epoch,
                     std::int64_t step, std::span<const float> parameters) {
  comm::ByteWriter writer;
  writer.put(epoch).put(step).put_vector(parameters);
  control.send(0, tag, writer.bytes());
}

// The next message of any tag from `source`, polling with back-off until the deadline.
comm::ControlMessage receive_any(comm::ControlChannel& control, int source, const char* awaited) {
  core::Deadline deadline(control.timeout_seconds());
  core::Backoff backoff;
  for (;;) {
    if (auto message = control.try_receive(std::nullopt, source)) return std::move(*message);
    if (deadline.expired())
      throw core::RuntimeError("timed out after " + std::to_string(control.timeout_seconds()) +
                               " s waiting for rank " + std::to_string(source) + ": " + awaited);
    backoff.wait();
  }
}

// Worker 1's report of a checkpoint or the end: step, parameters and optimizer state.
struct WorkerSnapshot {
  std::int64_t step = 0;
  std::vector<float> parameters;
  WorkerState state;
};

std::vector<std::uint8_t> serialize(const WorkerSnapshot& snapshot) {
  comm::ByteWriter writer;
  writer.put(snapshot.step).put_vector(snapshot.parameters);
  const auto state = serialize(snapshot.state);
  writer.put_vector(state);
  return writer.take();
}

WorkerSnapshot deserialize_snapshot(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "allreduce snapshot");
  WorkerSnapshot snapshot;
  snapshot.step = reader.get<std::int64_t>();
  snapshot.parameters = reader.get_vector<float>();
  snapshot.state = deserialize_worker_state(reader.get_vector<std::uint8_t>());
  reader.expect_end();
  return snapshot;
}

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
  comm::ByteWriter start_message;
  start_message.put(first_step).put_vector(serialize(start));
  for (int w = 1; w <= context.worker_count(); ++w)
    control.send(w, comm::Tag::kParameters, start_message.bytes());

  EpochReporter reporter(context);
  auto take_parameters = [&](const std::vector<float>& parameters) {
    GS_CHECK(parameters.size() == model.parameter_count(), "worker 1 sent a wrong-sized model");
    std::copy(parameters.begin(), parameters.end(), model.parameters().begin());
  };
  auto checkpoint = [&](const WorkerSnapshot& snapshot) {
    auto c = make_checkpoint(context, model, nullptr, snapshot.step,
                             DataPosition{snapshot.step / per_epoch, {}});
    c.optimizer_step = snapshot.state.optimizer_step;
    c.optimizer_state = snapshot.state.optimizer_state;
    checkpointer.write(c);
  };
  for (;;) {
    const auto message = receive_any(control, 1, "allreduce progress from worker 1");
    if (message.tag == comm::Tag::kMetrics) {
      comm::ByteReader reader(message.payload, "progress");
      const auto step = reader.get<std::int64_t>();
      const auto loss = reader.get<double>();
      const auto accuracy = reader.get<double>();
      const auto samples_per_second = reader.get<double>();
      const auto learning_rate = reader.get<double>();
      core::log_progress(reader.get_string());
      context.metrics.write(JsonLine()
                                .add("kind", "step")
                                .add("step", step)
                                .add("loss", loss)
                                .add("train_accuracy", accuracy)
                                .add("samples_per_second", samples_per_second)
                                .add("learning_rate", learning_rate)
                                .add("bytes_per_worker_step",
                                     4.0 * static_cast<double>(model.parameter_count())));
    } else if (message.tag == comm::Tag::kParameters) {  // an epoch ended
      comm::ByteReader reader(message.payload, "epoch model");
      const auto epoch = reader.get<std::int64_t>();
      const auto step = reader.get<std::int64_t>();
      take_parameters(reader.get_vector<float>());
      const bool stopping_early = reporter.stop_early();
      reporter.end_of_epoch(model, epoch, step);
      if (reporter.stop_early() && !stopping_early) control.send(1, comm::Tag::kFinish, {});
    } else if (message.tag == comm::Tag::kStateReply) {  // a checkpoint is due
      const auto snapshot = deserialize_snapshot(message.payload);
      take_parameters(snapshot.parameters);
      checkpoint(snapshot);
    } else if (message.tag == comm::Tag::kDiverged) {  // nothing more is saved
      comm::ByteReader reader(message.payload, "divergence report");
      const auto step = reader.get<std::int64_t>();
      const auto reason = reader.get_string();
      reader.expect_end();
      log_divergence(context, "at step " + std::to_string(step) + ": " + reason);
      return core::kExitDiverged;
    } else if (message.tag == comm::Tag::kDone) {
      comm::ByteReader reader(message.payload, "final model");
      const bool stopped = reader.get<std::uint8_t>() != 0;
      const auto step = reader.get<std::int64_t>();
      take_parameters(reader.get_vector<float>());
      PeakMemory peak_memory;
      peak_memory.add(1, reader.get<std::int64_t>());
      reader.expect_end();
      // The other workers end with the same step and send only their peak memory.
      for (int w = 2; w <= context.worker_count(); ++w) {
        const auto done = control.receive(w, comm::Tag::kDone, "its peak memory at the end");
        comm::ByteReader figures(done.payload, "peak memory");
        peak_memory.add(w, figures.get<std::int64_t>());
        figures.expect_end();
      }
      peak_memory.summarize(context);
      if (stopped) return core::kExitRequeue;
      ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                             make_checkpoint(context, model, nullptr, step,
                                             DataPosition{cfg.training.epochs, {}}));
      reporter.finish(model);
      return core::kExitOk;
    } else {
      throw core::RuntimeError("unexpected " + std::string(comm::tag_name(message.tag)) +
                               " message from worker 1");
    }
  }
}

int run_worker(RunContext& context, comm::ControlChannel& control, MPI_Comm workers) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  int index = 0, count = 0;
  MPI_Comm_rank(workers, &index);
  MPI_Comm_size(workers, &count);
  nn::Model model = nn::Model::build(cfg.model, seed);
  const std::size_t n = model.parameter_count();
  auto optimizer = nn::Optimizer::create(cfg.optimizer, n);

  const auto start_message = control.receive(0, comm::Tag::kParameters, "initial model");
  comm::ByteReader start_reader(start_message.payload, "initial model");
  std::int64_t step = start_reader.get<std::int64_t>();
  const auto start = deserialize_start_state(start_reader.get_vector<std::uint8_t>());
  if (start.resume) {
    GS_CHECK(start.parameters.size() == n, "the master sent a wrong-sized model");
    std::copy(start.parameters.begin(), start.parameters.end(), model.parameters().begin());
    restore_optimizer(start.worker, *optimizer);
  }

  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches = static_cast<std::int64_t>(
      data::EpochPlan(train_set.size(), batch_size, cfg.data.partition_batches, seed, 0, false).batch_count());
  const std::int64_t per_epoch = steps_per_epoch(context, count);
  const std::int64_t total_steps = per_epoch * cfg.training.epochs;
  nn::LearningRateSchedule schedule(cfg.optimizer, total_steps, per_epoch);

  std::vector<float> inputs(batch_size * model.sample_size());
  std::vector<std::int32_t> labels(batch_size);
  // Gradient scaled by the batch's samples, then samples, loss * samples, correct, and three
  // flags every worker must agree on: stop (a signal arrived), checkpoint (time is due) and
  // finish (the master's kFinish to worker 1: early stopping ends training after this step).
  std::vector<float> reduced(n + 6);
  // A worker other than worker 1 ends by telling the master its peak resident memory (worker
  // 1's comes with the final model).
  auto send_peak_memory = [&] {
    control.send(0, comm::Tag::kDone,
                 comm::ByteWriter().put<std::int64_t>(core::peak_resident_bytes()).bytes());
  };
  bool finish_asked = false;
  std::vector<float> update(n);
  core::Rng dropout_rng = core::Rng::derive(seed, 3, static_cast<std::uint64_t>(context.rank));
  ProgressMeter progress(total_steps, step);
  Checkpointer checkpointer(context);
  DivergenceGuard divergence(cfg.training);
  std::optional<data::EpochPlan> plan;
  std::int64_t plan_epoch = -1;
  auto snapshot = [&] {
    WorkerSnapshot s{step, {model.parameters().begin(), model.parameters().end()},
                     capture_worker_state(*optimizer, 0.0f)};
    return serialize(s);
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
      const auto indices = plan->batch_indices(static_cast<std::size_t>(b));
      data::gather_batch(train_set, indices, inputs.data(), labels.data());
      const auto result = model.train_batch(inputs.data(), labels.data(), indices.size(), dropout_rng);
      const auto samples = static_cast<float>(indices.size());
      const auto gradients = model.gradients();
      for (std::size_t i = 0; i < n; ++i) reduced[i] = gradients[i] * samples;
      reduced[n] = samples;
      reduced[n + 1] = static_cast<float>(result.loss) * samples;
      reduced[n + 2] = static_cast<float>(result.correct);
    }
    reduced[n + 3] = core::stop_requested() ? 1.0f : 0.0f;
    reduced[n + 4] = index == 0 && checkpointer.due(step) ? 1.0f : 0.0f;
    finish_asked = finish_asked ||
                   (index == 0 && control.try_receive(comm::Tag::kFinish, 0).has_value());
    reduced[n + 5] = finish_asked ? 1.0f : 0.0f;
    comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, reduced.data(), static_cast<int>(reduced.size()),
                                  MPI_FLOAT, MPI_SUM, workers),
                    "MPI_Allreduce");
    const float total = reduced[n];
    // The all-reduced loss is the same on every worker: all stop together, before the update.
    if (auto reason = divergence.check(step + 1, reduced[n + 1] / total)) {
      if (index == 0)
        control.send(0, comm::Tag::kDiverged,
                     comm::ByteWriter().put<std::int64_t>(step + 1).put_string(*reason).bytes());
      return core::kExitDiverged;
    }
    for (std::size_t i = 0; i < n; ++i) reduced[i] /= total;
    const double learning_rate = schedule.at(step);
    optimizer->compute_update(std::span<const float>(reduced.data(), n), model.parameters(),
                              update, learning_rate);
    nn::apply_update(model.parameters(), update);
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
      comm::ByteWriter figures;
      figures.put(step).put(progress.mean_loss()).put(progress.accuracy())
          .put(progress.samples_per_second()).put(learning_rate);
      figures.put_string(progress.report(epoch + 1, cfg.training.epochs, s + 1, per_epoch, step,
                                         learning_rate) + extra);
      control.send(0, comm::Tag::kMetrics, figures.bytes());
    }
    if (finish) break;  // the final model follows as kDone
    if (epoch_end && step < total_steps)
      send_parameters(control, comm::Tag::kParameters, epoch + 1, step, model.parameters());
    if (stop || reduced[n + 4] > 0 || (epoch_end && checkpointer.at_epoch_end())) {
      control.send(0, comm::Tag::kStateReply, snapshot());
      checkpointer.mark_written(step);
    }
    if (stop) {
      control.send(0, comm::Tag::kDone,
                   comm::ByteWriter().put<std::uint8_t>(1).put(step).put_vector(
                       std::span<const float>(model.parameters())).put<std::int64_t>(
                       core::peak_resident_bytes()).bytes());
      return core::kExitRequeue;
    }
  }
  if (index == 0)
    control.send(0, comm::Tag::kDone,
                 comm::ByteWriter().put<std::uint8_t>(0).put(step).put_vector(
                     std::span<const float>(model.parameters())).put<std::int64_t>(
                     core::peak_resident_bytes()).bytes());
  else
    send_peak_memory();
  return core::kExitOk;
}

}  // namespace

int run_allreduce(RunContext& context) {
  MPI_Comm workers = MPI_COMM_NULL;
  comm::check_mpi(MPI_Comm_split(context.world, context.is_master() ? MPI_UNDEFINED : 1,
                                 context.rank, &workers),
                  "MPI_Comm_split");
  comm::MpiControlChannel control(context.world, static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  context.phase = RunContext::kTraining;
  const int code = context.is_master() ? run_master(context, control)
                                       : run_worker(context, control, workers);
  if (workers != MPI_COMM_NULL) MPI_Comm_free(&workers);
  if (code == core::kExitRequeue) {
    // mpirun ends the whole job once one rank exits non-zero: nobody leaves before the master
    // has its checkpoint on disk (it returns only after writing it).
    control.flush();
    comm::check_mpi(MPI_Barrier(context.world), "MPI_Barrier");
  }
  return code;
}

}  // namespace gradshare::train
