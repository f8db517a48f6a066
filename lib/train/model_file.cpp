#include "train/model_file.h"

#include <algorithm>
#include <ctime>

#include "config/config_loader.h"
#include "core/errors.h"

namespace gradshare::train {

namespace {
std::string iso_time_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}
}  // namespace

ckpt::Checkpoint make_checkpoint(const RunContext& context, const nn::Model& model,
                                 nn::Optimizer* optimizer, std::int64_t iteration,
                                 std::int64_t epoch) {
  ckpt::Checkpoint c;
  c.gradshare_version = GRADSHARE_VERSION;
  c.config_yaml = context.config_yaml;
  c.strategy = context.config.training.strategy;
  c.iteration = iteration;
  c.epoch = epoch;
  c.world_size = context.size;
  c.created = iso_time_now();
  const auto parameters = model.parameters();
  c.parameters.assign(parameters.begin(), parameters.end());
  for (const auto& view : model.parameter_views())
    c.views.push_back({view.layer, view.role, view.shape, view.offset, view.size});
  if (optimizer) {
    for (const auto& buffer : optimizer->state())
      c.optimizer_state.push_back({buffer.name, {buffer.values.begin(), buffer.values.end()}});
    c.optimizer_step = optimizer->step();
  }
  return c;
}

LoadedModel load_model(const std::string& checkpoint_path, const std::vector<std::string>& overrides) {
  ckpt::Checkpoint checkpoint = ckpt::read_checkpoint(checkpoint_path);
  config::ExperimentConfig config =
      config::parse_experiment_text(checkpoint.config_yaml, checkpoint_path + " (stored config)", overrides);
  nn::Model model = nn::Model::build(config.model, static_cast<std::uint64_t>(config.run.seed));
  if (model.parameter_count() != checkpoint.parameters.size())
    throw core::UserError(checkpoint_path + ": holds " + std::to_string(checkpoint.parameters.size()) +
                          " parameters but its model has " + std::to_string(model.parameter_count()));
  std::copy(checkpoint.parameters.begin(), checkpoint.parameters.end(), model.parameters().begin());
  return {std::move(config), std::move(model), std::move(checkpoint)};
}

}  // namespace gradshare::train
