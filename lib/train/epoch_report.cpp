#include "train/epoch_report.h"

#include <cstdio>

#include "core/log.h"
#include "train/evaluation.h"
#include "train/progress.h"

namespace gradshare::train {

void EpochReporter::end_of_epoch(nn::Model& model, std::int64_t epoch, std::int64_t step,
                                 std::optional<std::int64_t> minibatches) {
  JsonLine line;
  line.add("kind", "epoch").add("epoch", epoch).add("step", step).add("wall_seconds", clock_.seconds());
  if (minibatches) line.add("minibatches", *minibatches);
  char buffer[160];
  std::string message = "epoch " + std::to_string(epoch) + " done";
  if (context_.data.validation.size() > 0) {
    const auto validation = evaluate(model, context_.data.validation);
    line.add("validation_accuracy", validation.accuracy).add("validation_loss", validation.loss);
    std::snprintf(buffer, sizeof buffer, "  validation acc %.2f%%", 100.0 * validation.accuracy);
    message += buffer;
  }
  const auto test = evaluate(model, context_.data.test);
  last_test_accuracy_ = test.accuracy;
  line.add("test_accuracy", test.accuracy).add("test_loss", test.loss);
  std::snprintf(buffer, sizeof buffer, "  test acc %.2f%%  test loss %.4f  elapsed %s",
                100.0 * test.accuracy, test.loss, format_duration(clock_.seconds()).c_str());
  message += buffer;
  core::log_info(message);
  context_.metrics.write(line);
}

void EpochReporter::finish(nn::Model& model) {
  const auto test = evaluate(model, context_.data.test);
  last_test_accuracy_ = test.accuracy;
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "final test accuracy %.2f%% on %lld samples (%s)",
                100.0 * test.accuracy, static_cast<long long>(test.samples),
                format_duration(clock_.seconds()).c_str());
  core::log_info(buffer);
  context_.metrics.write(JsonLine()
                             .add("kind", "final")
                             .add("test_accuracy", test.accuracy)
                             .add("test_loss", test.loss)
                             .add("wall_seconds", clock_.seconds()));
}

}  // namespace gradshare::train
