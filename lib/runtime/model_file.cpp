#include "runtime/model_file.h"

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "config/config_loader.h"
#include "core/errors.h"
#include "core/log.h"

namespace gradshare::runtime {

nn::Model build_model(const config::ExperimentConfig& config) {
  return nn::Model::build(config.model, static_cast<std::uint64_t>(config.run.seed));
}

void log_model(const nn::Model& model) {
  core::log_info("model: " + std::to_string(model.parameter_count()) + " parameters\n" +
                 model.summary());
}

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

std::size_t copy_optimizer_state(std::int64_t step, const std::vector<ckpt::NamedBuffer>& saved,
                                 nn::Optimizer& optimizer) {
  std::size_t matched = 0;
  for (auto& buffer : optimizer.state()) {
    auto it = std::find_if(saved.begin(), saved.end(),
                           [&](const ckpt::NamedBuffer& one) { return one.name == buffer.name; });
    if (it == saved.end() || it->values.size() != buffer.values.size()) continue;
    std::copy(it->values.begin(), it->values.end(), buffer.values.begin());
    ++matched;
  }
  optimizer.set_step(step);
  return matched;
}

void restore_optimizer_state(std::int64_t step, const std::vector<ckpt::NamedBuffer>& saved,
                             nn::Optimizer& optimizer, const std::string& source) {
  if (copy_optimizer_state(step, saved, optimizer) < optimizer.state().size())
    core::log_warn(source +
                   ": optimizer state missing or of another optimizer; missing parts "
                   "start from zero");
}

ckpt::Checkpoint make_checkpoint(const RunContext& context, const nn::Model& model,
                                 nn::Optimizer* optimizer, std::int64_t iteration,
                                 const DataPosition& position) {
  ckpt::Checkpoint c;
  c.gradshare_version = GRADSHARE_VERSION;
  c.config_yaml = context.config_yaml;
  c.strategy = context.config.training.strategy;
  c.iteration = iteration;
  c.epoch = position.first_epoch;
  c.partitions_done = position.partitions_done;
  c.world_size = context.size;
  c.created = iso_time_now();
  const auto parameters = model.parameters();
  c.parameters.assign(parameters.begin(), parameters.end());
  for (const auto& view : model.parameter_views())
    c.views.push_back({view.layer, view.role, view.shape, view.offset, view.size});
  c.buffers = model.buffers();
  for (const auto& tensor : model.buffer_views()) {
    const nn::ParameterView view = nn::view_of(tensor);
    c.buffer_views.push_back({view.layer, view.role, view.shape, view.offset, view.size});
  }
  if (optimizer) {
    for (const auto& buffer : optimizer->state())
      c.optimizer_state.push_back({buffer.name, {buffer.values.begin(), buffer.values.end()}});
    c.optimizer_step = optimizer->step();
  }
  return c;
}

void check_checkpoint_matches(const ckpt::Checkpoint& checkpoint, const std::string& source,
                              const nn::Model& model) {
  if (checkpoint.parameters.size() != model.parameter_count())
    throw core::UserError(source + ": holds " + std::to_string(checkpoint.parameters.size()) +
                          " parameters, the model of this config has " +
                          std::to_string(model.parameter_count()));
  if (!model.is_module()) return;
  // A module's tensors by name and shape: another module of the same size is no match.
  const auto& views = model.parameter_views();
  for (std::size_t i = 0; i < views.size() && i < checkpoint.views.size(); ++i) {
    const auto& saved = checkpoint.views[i];
    if (saved.layer != views[i].layer || saved.role != views[i].role ||
        saved.shape != views[i].shape || saved.offset != views[i].offset)
      throw core::UserError(source + ": its parameter " + saved.layer + "." + saved.role +
                            " does not match the module's " + views[i].layer + "." +
                            views[i].role + " (model.torchscript names another module)");
  }
  const std::size_t buffers = model.buffer_count();
  if (checkpoint.buffers.size() != buffers)
    throw core::UserError(source + ": holds " + std::to_string(checkpoint.buffers.size()) +
                          " buffer values but the module of model.torchscript has " +
                          std::to_string(buffers));
}

void restore_checkpoint(const ckpt::Checkpoint& checkpoint, const std::string& source,
                        nn::Model& model, nn::Optimizer* optimizer) {
  check_checkpoint_matches(checkpoint, source, model);
  std::copy(checkpoint.parameters.begin(), checkpoint.parameters.end(), model.parameters().begin());
  if (!checkpoint.buffers.empty()) model.set_buffers(checkpoint.buffers);
  if (!optimizer) return;
  const auto saved = ckpt::optimizer_for_worker(checkpoint, 0);
  restore_optimizer_state(saved.step, saved.buffers, *optimizer, source);
}

DataPosition data_position(const ckpt::Checkpoint& checkpoint) {
  return {checkpoint.epoch, checkpoint.partitions_done};
}

void note_resize(RunContext& context, const ckpt::Checkpoint& checkpoint, const std::string& how) {
  if (checkpoint.world_size == context.size) return;
  core::log_info("resuming a " + std::to_string(checkpoint.world_size) + "-rank run with " +
                 std::to_string(context.size) + " ranks: " + how);
  context.metrics.write(report::JsonLine()
                            .add("kind", "resize")
                            .add("checkpoint_ranks", checkpoint.world_size)
                            .add("ranks", context.size)
                            .add("how", how));
}

LoadedModel load_model(const std::string& checkpoint_path,
                       const std::vector<std::string>& overrides) {
  ckpt::Checkpoint checkpoint = ckpt::read_checkpoint(checkpoint_path);
  config::ExperimentConfig config = config::parse_experiment_text(
      checkpoint.config_yaml, checkpoint_path + " (stored config)", overrides);
  // A TorchScript run's module moved or deleted since: the run's own model.pt has the same
  // tensors (the checkpoint's values replace its own below).
  auto& module = config.model.torchscript;
  const auto beside = std::filesystem::path(checkpoint_path).parent_path() / "model.pt";
  if (!module.empty() && !std::filesystem::exists(module) && std::filesystem::exists(beside))
    module = beside.string();
  nn::Model model = build_model(config);
  restore_checkpoint(checkpoint, checkpoint_path, model, nullptr);
  return {std::move(config), std::move(model), std::move(checkpoint)};
}

std::int64_t resume_iteration(const ckpt::Checkpoint& checkpoint, const std::string& strategy,
                              std::int64_t batches, std::int64_t epochs) {
  if (checkpoint.strategy != strategy) {
    const std::int64_t epoch = std::clamp<std::int64_t>(checkpoint.epoch, 0, epochs);
    core::log_info("the checkpoint was written by " + checkpoint.strategy +
                   ": its position within an epoch does not carry over; epoch " +
                   std::to_string(epoch + 1) + " starts from its first minibatch");
    return epoch * batches;
  }
  if (checkpoint.iteration < 0 || checkpoint.iteration > batches * epochs ||
      checkpoint.iteration / batches != checkpoint.epoch)
    throw core::UserError("checkpoint at iteration " + std::to_string(checkpoint.iteration) +
                          " of epoch " + std::to_string(checkpoint.epoch + 1) +
                          " does not fit this config's " + std::to_string(batches) +
                          " minibatches per epoch (did the data or training.batch_size change?)");
  return checkpoint.iteration;
}

}  // namespace gradshare::runtime
