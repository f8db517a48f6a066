#include "runtime/module_file.h"

#include "report/metrics_log.h"

namespace gradshare::runtime {

std::string module_metadata(const RunContext& context) {
  const auto& cfg = context.config;
  std::string shape = "[";
  for (std::size_t i = 0; i < cfg.model.input_shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(cfg.model.input_shape[i]);
  shape += "]";
  return report::JsonLine()
      .add("normalize", cfg.data.normalize)
      .add("normalize_offset", static_cast<double>(context.data.normalization.offset))
      .add("normalize_scale", static_cast<double>(context.data.normalization.scale))
      .add_raw("input_shape", shape)
      .add("num_classes", cfg.model.num_classes)
      .add("gradshare_version", std::string(GRADSHARE_VERSION))
      .str();
}

void write_module_file(const RunContext& context, const nn::Model& model) {
  if (!model.is_module()) return;
  model.save_module(context.run_directory.file("model.pt"), kModuleMetadata,
                    module_metadata(context));
}

}  // namespace gradshare::runtime
