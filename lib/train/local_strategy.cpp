#include "train/local_strategy.h"

#include <vector>

#include "ckpt/checkpoint.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/epoch_report.h"
#include "train/evaluation.h"
#include "train/model_file.h"
#include "train/progress.h"
#include "train/update_recorder.h"

namespace gradshare::train {

int run_local(RunContext& context) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  nn::Model model = nn::Model::build(cfg.model, seed);
  auto optimizer = nn::Optimizer::create(cfg.optimizer, model.parameter_count());
  core::log_info("model: " + std::to_string(model.parameter_count()) + " parameters\n" +
                 model.summary());

  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches_per_epoch =
      data::EpochPlan(train_set.size(), batch_size, cfg.data.partition_batches, seed, 0, false)
          .batch_count();
  const auto total_steps = static_cast<std::int64_t>(batches_per_epoch) * cfg.training.epochs;
  nn::LearningRateSchedule schedule(cfg.optimizer, total_steps,
                                    static_cast<std::int64_t>(batches_per_epoch));

  std::vector<float> inputs(batch_size * model.sample_size());
  std::vector<std::int32_t> labels(batch_size);
  std::vector<float> update(model.parameter_count());
  core::Rng dropout_rng = core::Rng::derive(seed, /*stream=*/3);
  UpdateRecorder recorder(model.parameter_count());
  ProgressMeter progress(total_steps);
  EpochReporter reporter(context);

  std::int64_t step = 0;
  for (std::int64_t epoch = 0; epoch < cfg.training.epochs; ++epoch) {
    data::EpochPlan plan(train_set.size(), batch_size, cfg.data.partition_batches, seed, epoch,
                         cfg.data.shuffle);
    for (std::size_t partition = 0; partition < plan.partition_count(); ++partition) {
      const auto range = plan.partition(partition);
      for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
        const auto indices = plan.batch_indices(b);
        data::gather_batch(train_set, indices, inputs.data(), labels.data());
        const auto result = model.train_batch(inputs.data(), labels.data(), indices.size(), dropout_rng);
        const double learning_rate = schedule.at(step);
        optimizer->compute_update(model.gradients(), model.parameters(), update, learning_rate);
        recorder.record(update);
        nn::apply_update(model.parameters(), update);
        progress.record(result.loss, result.correct, static_cast<std::int64_t>(indices.size()));
        ++step;
        if (step % cfg.logging.every_steps == 0) {
          const double samples_per_second = progress.samples_per_second();
          const double loss = progress.mean_loss();
          const double accuracy = progress.accuracy();
          core::log_info(progress.report(epoch + 1, cfg.training.epochs,
                                         static_cast<std::int64_t>(b + 1),
                                         static_cast<std::int64_t>(plan.batch_count()), step,
                                         learning_rate));
          context.metrics.write(JsonLine()
                                    .add("kind", "step")
                                    .add("epoch", epoch + 1)
                                    .add("step", step)
                                    .add("loss", loss)
                                    .add("train_accuracy", accuracy)
                                    .add("samples_per_second", samples_per_second)
                                    .add("learning_rate", learning_rate));
        }
      }
    }
    reporter.end_of_epoch(model, epoch + 1, step);
  }
  ckpt::write_checkpoint(context.run_directory.file("model.h5"),
                         make_checkpoint(context, model, optimizer.get(), step, cfg.training.epochs));
  reporter.finish(model);
  return 0;
}

}  // namespace gradshare::train
