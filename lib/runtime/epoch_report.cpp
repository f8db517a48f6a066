#include "runtime/epoch_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckpt/checkpoint.h"
#include "core/log.h"
#include "report/evaluation.h"
#include "report/json_value.h"
#include "runtime/model_file.h"
#include "runtime/running_statistics.h"
#include "report/progress.h"

namespace gradshare::runtime {

namespace {

const data::Dataset& watched_split(const RunContext& context) {
  return context.data.validation.size() > 0 ? context.data.validation : context.data.test;
}

std::string split_name(const RunContext& context) {
  return context.data.validation.size() > 0 ? "validation" : "test";
}

std::string format_figure(const std::string& metric, double value) {
  char text[32];
  if (metric == "accuracy") std::snprintf(text, sizeof text, "%.2f%%", 100.0 * value);
  else std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

}  // namespace

EpochReporter::EpochReporter(RunContext& context)
    : context_(context), early_stopping_(context.config.early_stopping, context.config.training.epochs) {}

double EpochReporter::watched(double accuracy, double loss) const {
  return early_stopping_.metric() == "loss" ? loss : accuracy;
}

void EpochReporter::restore_best() {
  best_restored_ = true;
  const auto path = context_.run_directory.file("best.h5");
  if (!std::filesystem::exists(path)) return;
  const auto best = ckpt::read_checkpoint(path);
  auto model = build_model(context_.config);
  restore_checkpoint(best, path, model, nullptr);
  const auto evaluation = report::evaluate(model, watched_split(context_));
  early_stopping_.restore(best.epoch, watched(evaluation.accuracy, evaluation.loss));
  core::log_info("early stopping: the best so far is epoch " + std::to_string(best.epoch) + " (" +
                 split_name(context_) + " " + early_stopping_.metric() + " " +
                 format_figure(early_stopping_.metric(), early_stopping_.best_value()) +
                 ", from best.h5)");
}

std::optional<report::JsonLine> EpochReporter::observe(nn::Model& model, std::int64_t epoch,
                                               std::int64_t step, double value, report::JsonLine& line) {
  if (!best_restored_) restore_best();
  const auto verdict = early_stopping_.observe(epoch, value);
  if (verdict.improved) {
    // The epoch attribute of best.h5 is the epoch it holds (what restore_best reads back).
    ckpt::write_checkpoint(context_.run_directory.file("best.h5"),
                           make_checkpoint(context_, model, nullptr, step, DataPosition{epoch, {}}));
  }
  const auto best = early_stopping_.best_epoch();
  if (best) line.add("best_epoch", *best);
  if (!verdict.stop) return std::nullopt;
  stop_early_ = true;
  const auto& cfg = context_.config.early_stopping;
  const std::string best_text =
      best ? "best " + format_figure(cfg.metric, early_stopping_.best_value()) + " at epoch " +
                 std::to_string(*best) + ", in best.h5"
           : "no finite figure yet";
  const std::string reason = split_name(context_) + " " + cfg.metric +
                             " has not improved by more than " +
                             format_figure(cfg.metric, cfg.min_delta) + " for " +
                             std::to_string(epoch - best.value_or(0)) + " epochs (patience " +
                             std::to_string(cfg.patience) + "; " + best_text + ")";
  core::log_info("early stopping after epoch " + std::to_string(epoch) + " of " +
                 std::to_string(context_.config.training.epochs) + ": " + reason +
                 "; the work in flight finishes, then model.h5 is written");
  report::JsonLine record;
  record.add("kind", "early_stop")
      .add("epoch", epoch)
      .add("split", split_name(context_))
      .add("metric", cfg.metric)
      .add("patience", cfg.patience)
      .add("reason", reason);
  if (best) record.add("best_epoch", *best).add("best_value", early_stopping_.best_value());
  return record;
}

void EpochReporter::record_if_missing(nn::Model& model, std::int64_t iteration,
                                      std::int64_t batches) {
  const std::int64_t epoch = iteration / batches;
  if (iteration == 0 || iteration % batches != 0 || epoch >= context_.config.training.epochs)
    return;
  for (const auto& record : report::read_records(context_.run_directory.file("metrics.jsonl")))
    if (record.string_at("kind") == "epoch" &&
        record.number_at("epoch") == static_cast<double>(epoch))
      return;
  core::log_warn("metrics.jsonl has no record of epoch " + std::to_string(epoch) +
                 " (the run ended between its checkpoint and its evaluation): evaluating the "
                 "checkpoint's model for it");
  end_of_epoch(model, epoch, iteration, batches);
}

void EpochReporter::end_of_epoch(nn::Model& model, std::int64_t epoch, std::int64_t step,
                                 std::optional<std::int64_t> minibatches) {
  refresh_running_statistics(model, context_);
  report::JsonLine line;
  line.add("kind", "epoch").add("epoch", epoch).add("step", step).add("wall_seconds", wall_seconds());
  if (minibatches) line.add("minibatches", *minibatches);
  char buffer[160];
  std::string message = "epoch " + std::to_string(epoch) + " done";
  std::optional<report::Evaluation> validation;
  if (context_.data.validation.size() > 0) {
    validation = report::evaluate(model, context_.data.validation);
    line.add("validation_accuracy", validation->accuracy).add("validation_loss", validation->loss);
    std::snprintf(buffer, sizeof buffer, "  validation acc %.2f%%", 100.0 * validation->accuracy);
    message += buffer;
  }
  const auto test = report::evaluate(model, context_.data.test);
  line.add("test_accuracy", test.accuracy).add("test_loss", test.loss);
  std::snprintf(buffer, sizeof buffer, "  test acc %.2f%%  test loss %.4f  elapsed %s",
                100.0 * test.accuracy, test.loss, report::format_duration(wall_seconds()).c_str());
  message += buffer;
  core::log_info(message);
  std::optional<report::JsonLine> early_stop;
  if (early_stopping_.enabled() && !stop_early_) {
    const auto& watched_evaluation = validation ? *validation : test;
    early_stop = observe(model, epoch, step,
                         watched(watched_evaluation.accuracy, watched_evaluation.loss), line);
  }
  context_.metrics.write(line);
  if (early_stop) context_.metrics.write(*early_stop);
}

void EpochReporter::finish(nn::Model& model, std::optional<std::int64_t> minibatches) {
  const auto test = report::evaluate(model, context_.data.test);
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "final test accuracy %.2f%% on %lld samples (%s)",
                100.0 * test.accuracy, static_cast<long long>(test.samples),
                report::format_duration(wall_seconds()).c_str());
  core::log_info(buffer);
  auto line = report::JsonLine()
                  .add("kind", "final")
                  .add("test_accuracy", test.accuracy)
                  .add("test_loss", test.loss)
                  .add("wall_seconds", wall_seconds())
                  .add("stopped_early", stop_early_);
  if (minibatches) line.add("minibatches", *minibatches);
  context_.metrics.write(line);
}

}  // namespace gradshare::runtime
