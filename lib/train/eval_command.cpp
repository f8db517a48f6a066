#include "train/eval_command.h"

#include <cstdio>

#include "data/loader.h"
#include "train/evaluation.h"
#include "train/model_file.h"

namespace gradshare::train {

int eval_command(const std::string& model_path, const std::vector<std::string>& overrides) {
  LoadedModel loaded = load_model(model_path, overrides);
  // Evaluation reads the whole test set, whatever subset the training run used.
  loaded.config.data.train_subset = 1;
  const auto data = data::load_data(loaded.config.data, static_cast<std::uint64_t>(loaded.config.run.seed));
  const auto result = evaluate(loaded.model, data.test);
  std::printf("model %s (iteration %lld, epoch %lld)\n", model_path.c_str(),
              static_cast<long long>(loaded.checkpoint.iteration),
              static_cast<long long>(loaded.checkpoint.epoch));
  std::printf("test accuracy %.2f%%  loss %.4f  samples %lld\n", 100.0 * result.accuracy, result.loss,
              static_cast<long long>(result.samples));
  std::printf("%s", format_confusion(result).c_str());
  return 0;
}

}  // namespace gradshare::train
