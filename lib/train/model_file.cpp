#include "train/model_file.h"

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "config/config_loader.h"
#include "core/errors.h"
#include "core/log.h"
#include "train/worker_state.h"

namespace gradshare::train {

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

void restore_optimizer_state(const WorkerState& saved, nn::Optimizer& optimizer,
                             const std::string& source) {
  if (restore_optimizer(saved, optimizer) < optimizer.state().size())
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
  restore_optimizer_state(WorkerState{saved.step, saved.buffers, 0.0f, {}}, *optimizer, source);
}

DataPosition data_position(const ckpt::Checkpoint& checkpoint) {
  return {checkpoint.epoch, checkpoint.partitions_done};
}

StartState start_state(const std::optional<ckpt::Checkpoint>& resume, std::size_t worker) {
  StartState start;
  if (!resume) return start;
  start.resume = true;
  start.parameters = resume->parameters;
  auto saved = ckpt::optimizer_for_worker(*resume, worker);
  start.worker.optimizer_step = saved.step;
  start.worker.optimizer_state = std::move(saved.buffers);
  return start;
}

void apply_start_state(const StartState& start, nn::Model& model, nn::Optimizer& optimizer) {
  if (!start.resume) return;
  GS_CHECK(start.parameters.size() == model.parameter_count(),
           "the master sent " + std::to_string(start.parameters.size()) + " parameters for a " +
               std::to_string(model.parameter_count()) + "-parameter model");
  std::copy(start.parameters.begin(), start.parameters.end(), model.parameters().begin());
  restore_optimizer_state(start.worker, optimizer, "the resumed checkpoint");
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

}  // namespace gradshare::train
