#include "ckpt/describe.h"

namespace gradshare::ckpt {

namespace {
std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}
}  // namespace

std::string describe(const std::string& path, const Checkpoint& c) {
  std::string text = "checkpoint " + path + "\n";
  text += "  format version     " + std::to_string(kFormatVersion) + "\n";
  text += "  written by         gradshare " + c.gradshare_version + " at " + c.created + "\n";
  text += "  strategy           " + c.strategy + "\n";
  text += "  iteration          " + std::to_string(c.iteration) + "\n";
  text += "  epoch              " + std::to_string(c.epoch) + "\n";
  text += "  partitions done    " + std::to_string(c.partitions_done.size()) + "\n";
  text += "  world size         " + std::to_string(c.world_size) + "\n";
  text += "  parameters         " + std::to_string(c.parameters.size()) + " float32\n";
  for (const auto& view : c.views)
    text += "    /model/" + view.layer + "/" + view.role + " " + shape_text(view.shape) + "\n";
  if (!c.optimizer_state.empty()) {
    text += "  optimizer state    step " + std::to_string(c.optimizer_step) + ":";
    for (const auto& buffer : c.optimizer_state) text += " " + buffer.name;
    text += "\n";
  }
  if (!c.worker_optimizers.empty()) {
    text += "  worker optimizers  " + std::to_string(c.worker_optimizers.size()) + " workers\n";
    for (std::size_t w = 0; w < c.worker_optimizers.size(); ++w) {
      const auto& state = c.worker_optimizers[w];
      text += "    /workers/" + std::to_string(w) + "/optimizer step " + std::to_string(state.step);
      text += state.buffers.empty() ? " (no buffers)" : ":";
      for (const auto& buffer : state.buffers) text += " " + buffer.name;
      text += "\n";
    }
  }
  if (!c.residuals.empty())
    text += "  residuals          " + std::to_string(c.residuals.size() / c.parameters.size()) +
            " workers\n";
  if (!c.thresholds.empty())
    text += "  thresholds         " + std::to_string(c.thresholds.size()) + " workers\n";
  if (!c.version_vector.empty())
    text += "  version vector     " + std::to_string(c.version_vector.size()) + " origins\n";
  return text;
}

}  // namespace gradshare::ckpt
