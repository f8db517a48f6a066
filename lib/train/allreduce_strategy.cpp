#include "train/allreduce_strategy.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "comm/control_plane.h"
#include "comm/mpi_error.h"
#include "core/log.h"
#include "core/timer.h"
#include "core/rng.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/epoch_report.h"
#include "train/model_file.h"
#include "train/progress.h"

namespace gradshare::train {

namespace {

// Worker 1 -> master messages.
void send_parameters(comm::ControlPlane& control, comm::Tag tag, std::int64_t epoch,
                     std::int64_t step, std::span<const float> parameters) {
  comm::ByteWriter writer;
  writer.put(epoch).put(step).put_vector(parameters);
  control.send(0, tag, writer.bytes());
}

// The next message of any tag from `source`, polling with back-off until the deadline.
comm::ControlMessage receive_any(comm::ControlPlane& control, int source, const char* awaited) {
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

int run_master(RunContext& context, comm::ControlPlane& control) {
  const auto& cfg = context.config;
  nn::Model model = nn::Model::build(cfg.model, static_cast<std::uint64_t>(cfg.run.seed));
  core::log_info("model: " + std::to_string(model.parameter_count()) + " parameters\n" +
                 model.summary());
  EpochReporter reporter(context);
  std::int64_t step = 0;
  for (;;) {
    const auto message = receive_any(control, 1, "allreduce progress from worker 1");
    comm::ByteReader reader(message.payload, "allreduce report");
    if (message.tag == comm::Tag::kMetrics) {
      const auto line = reader.get_string();
      core::log_info(line);
      continue;
    }
    const auto epoch = reader.get<std::int64_t>();
    step = reader.get<std::int64_t>();
    const auto parameters = reader.get_vector<float>();
    GS_CHECK(parameters.size() == model.parameter_count(), "worker 1 sent a wrong-sized model");
    std::copy(parameters.begin(), parameters.end(), model.parameters().begin());
    if (message.tag == comm::Tag::kParameters) {
      reporter.end_of_epoch(model, epoch, step);
    } else {
      break;  // kDone: the final model
    }
  }
  ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                         make_checkpoint(context, model, nullptr, step, DataPosition{cfg.training.epochs, {}}));
  reporter.finish(model);
  return 0;
}

int run_worker(RunContext& context, comm::ControlPlane& control, MPI_Comm workers) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  int index = 0, count = 0;
  MPI_Comm_rank(workers, &index);
  MPI_Comm_size(workers, &count);
  nn::Model model = nn::Model::build(cfg.model, seed);
  const std::size_t n = model.parameter_count();
  auto optimizer = nn::Optimizer::create(cfg.optimizer, n);
  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches = static_cast<std::int64_t>(
      data::EpochPlan(train_set.size(), batch_size, cfg.data.partition_batches, seed, 0, false).batch_count());
  const std::int64_t steps_per_epoch = (batches + count - 1) / count;
  nn::LearningRateSchedule schedule(cfg.optimizer, steps_per_epoch * cfg.training.epochs, steps_per_epoch);

  std::vector<float> inputs(batch_size * model.sample_size());
  std::vector<std::int32_t> labels(batch_size);
  // Gradient scaled by the batch's samples, then samples, loss * samples, correct.
  std::vector<float> reduced(n + 3);
  std::vector<float> update(n);
  core::Rng dropout_rng = core::Rng::derive(seed, 3, static_cast<std::uint64_t>(context.rank));
  ProgressMeter progress(steps_per_epoch * cfg.training.epochs);
  std::int64_t step = 0;
  for (std::int64_t epoch = 0; epoch < cfg.training.epochs; ++epoch) {
    data::EpochPlan plan(train_set.size(), batch_size, cfg.data.partition_batches, seed, epoch, cfg.data.shuffle);
    for (std::int64_t s = 0; s < steps_per_epoch; ++s) {
      const std::int64_t b = s * count + index;
      std::fill(reduced.begin(), reduced.end(), 0.0f);
      if (b < batches) {
        const auto indices = plan.batch_indices(static_cast<std::size_t>(b));
        data::gather_batch(train_set, indices, inputs.data(), labels.data());
        const auto result = model.train_batch(inputs.data(), labels.data(), indices.size(), dropout_rng);
        const auto samples = static_cast<float>(indices.size());
        const auto gradients = model.gradients();
        for (std::size_t i = 0; i < n; ++i) reduced[i] = gradients[i] * samples;
        reduced[n] = samples;
        reduced[n + 1] = static_cast<float>(result.loss) * samples;
        reduced[n + 2] = static_cast<float>(result.correct);
      }
      comm::check_mpi(MPI_Allreduce(MPI_IN_PLACE, reduced.data(), static_cast<int>(reduced.size()),
                                    MPI_FLOAT, MPI_SUM, workers),
                      "MPI_Allreduce");
      const float total = reduced[n];
      for (std::size_t i = 0; i < n; ++i) reduced[i] /= total;
      const double learning_rate = schedule.at(step);
      optimizer->compute_update(std::span<const float>(reduced.data(), n), model.parameters(),
                                update, learning_rate);
      nn::apply_update(model.parameters(), update);
      ++step;
      progress.record(reduced[n + 1] / total, static_cast<std::int64_t>(reduced[n + 2]),
                      static_cast<std::int64_t>(total));
      if (index == 0 && step % cfg.logging.every_steps == 0) {
        char extra[96];
        std::snprintf(extra, sizeof extra, "  %.0f B/worker/step (dense all-reduce)",
                      4.0 * static_cast<double>(n));
        const auto line = progress.report(epoch + 1, cfg.training.epochs, s + 1, steps_per_epoch,
                                          step, learning_rate) + extra;
        control.send(0, comm::Tag::kMetrics, comm::ByteWriter().put_string(line).bytes());
      }
    }
    if (index == 0 && epoch + 1 < cfg.training.epochs)
      send_parameters(control, comm::Tag::kParameters, epoch + 1, step, model.parameters());
  }
  if (index == 0) send_parameters(control, comm::Tag::kDone, cfg.training.epochs, step, model.parameters());
  return 0;
}

}  // namespace

int run_allreduce(RunContext& context) {
  MPI_Comm workers = MPI_COMM_NULL;
  comm::check_mpi(MPI_Comm_split(context.world, context.is_master() ? MPI_UNDEFINED : 1,
                                 context.rank, &workers),
                  "MPI_Comm_split");
  comm::ControlPlane control(context.world, static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  const int code = context.is_master() ? run_master(context, control)
                                       : run_worker(context, control, workers);
  if (workers != MPI_COMM_NULL) MPI_Comm_free(&workers);
  return code;
}

}  // namespace gradshare::train
