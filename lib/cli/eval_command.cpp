#include "cli/eval_command.h"

#include <cstdio>
#include <fstream>

#include "core/errors.h"
#include "data/loader.h"
#include "report/evaluation.h"
#include "runtime/model_file.h"

namespace gradshare::cli {

using runtime::LoadedModel;
using runtime::load_model;

namespace {
void write_predictions(const std::string& path, const std::vector<std::int32_t>& predictions) {
  std::ofstream out(path);
  for (std::int32_t p : predictions) out << p << '\n';
  out.close();
  if (!out) throw core::UserError(path + ": cannot write the predictions");
}
}  // namespace

int eval_command(const std::string& model_path, const std::vector<std::string>& overrides,
                 const std::string& predictions_path) {
  // The whole test set, whatever subset the training run used (an explicit data.test_subset
  // still applies). The training data keeps the run's subset and split, so the normalisation
  // fitted on it is the one the model was trained with.
  std::vector<std::string> eval_overrides{"data.test_subset=0"};
  eval_overrides.insert(eval_overrides.end(), overrides.begin(), overrides.end());
  LoadedModel loaded = load_model(model_path, eval_overrides);
  const auto data = data::load_data(loaded.config.data, static_cast<std::uint64_t>(loaded.config.run.seed));
  const auto result = report::evaluate(loaded.model, data.test);
  std::printf("model %s (iteration %lld, epoch %lld)\n", model_path.c_str(),
              static_cast<long long>(loaded.checkpoint.iteration),
              static_cast<long long>(loaded.checkpoint.epoch));
  std::printf("test accuracy %.2f%%  loss %.4f  samples %lld\n", 100.0 * result.accuracy, result.loss,
              static_cast<long long>(result.samples));
  std::printf("%s", report::format_confusion(result).c_str());
  if (!predictions_path.empty()) write_predictions(predictions_path, result.predictions);
  return 0;
}

}  // namespace gradshare::cli
