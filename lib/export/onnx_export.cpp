#include "export/onnx_export.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "core/errors.h"
#include "data/loader.h"
#include "nn/layer_factory.h"
#include "runtime/model_file.h"

namespace gradshare::onnx {
namespace {

namespace fs = std::filesystem;

// The Fashion-MNIST class names (Zalando's), classes 0..9.
constexpr const char* kFashionMnistLabels =
    R"(["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", )"
    R"("Bag", "Ankle boot"])";

// 9 significant digits: reads back as the same float32.
std::string float_text(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  return text;
}

std::string json_list(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

using Ints = std::vector<std::int64_t>;

// Appends nodes one after another: each reads the previous node's output (and initializers).
struct GraphBuilder {
  Graph graph;
  std::string current = "input";

  void add(const std::string& op_type, std::vector<std::string> initializers,
           const std::string& output, std::vector<Attribute> attributes = {}) {
    initializers.insert(initializers.begin(), current);
    graph.nodes.push_back({op_type, std::move(initializers), {output}, std::move(attributes)});
    current = output;
  }

  // The layer's parameters (kernel, then bias) as initializers "<layer>_<role>"; their names.
  std::vector<std::string> add_parameters(const nn::Model& model, const std::string& layer) {
    std::vector<std::string> names;
    const auto parameters = model.parameters();
    for (const nn::ParameterView& view : model.parameter_views()) {
      if (view.layer != layer) continue;
      names.push_back(layer + "_" + view.role);
      const auto values = parameters.subspan(view.offset, view.size);
      graph.initializers.push_back({names.back(), view.shape, {values.begin(), values.end()}});
    }
    return names;
  }

  void add_activation(nn::Activation activation, float alpha, const std::string& layer) {
    using nn::Activation;
    const std::string output = layer + "_" + nn::activation_name(activation);
    switch (activation) {
      case Activation::kNone: return;
      case Activation::kRelu: return add("Relu", {}, output);
      case Activation::kLeakyRelu: return add("LeakyRelu", {}, output, {{"alpha", alpha}});
      case Activation::kElu: return add("Elu", {}, output, {{"alpha", alpha}});
      case Activation::kTanh: return add("Tanh", {}, output);
      case Activation::kSigmoid: return add("Sigmoid", {}, output);
    }
  }
};

std::vector<Dimension> batch_of(const std::vector<std::int64_t>& sample_shape) {
  std::vector<Dimension> shape{{0, "batch"}};
  for (std::int64_t d : sample_shape) shape.push_back({d, ""});
  return shape;
}

// UserError unless `out` can be created: its directory exists and is writable.
void check_writable(const fs::path& out, const fs::path& directory) {
  const std::string prefix = out.string() + ": cannot write the ONNX model: ";
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw core::UserError(prefix + "it is a directory");
  if (!fs::is_directory(directory, ec))
    throw core::UserError(prefix + "no directory " + directory.string());
  if (::access(directory.c_str(), W_OK) != 0)
    throw core::UserError(prefix + "directory " + directory.string() + " is not writable");
}

// Writes through a temporary file in the same directory, so OUT is either whole or untouched.
void write_file(const fs::path& out, const fs::path& directory, const std::string& bytes) {
  const fs::path temporary = directory / ("." + out.filename().string() + ".tmp");
  std::error_code ec;
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw core::UserError(out.string() + ": cannot create " + temporary.string());
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) {
      fs::remove(temporary, ec);
      throw core::RuntimeError(temporary.string() + ": write failed (disk full?)");
    }
  }
  fs::rename(temporary, out, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw core::UserError(out.string() + ": cannot write the ONNX model: " + ec.message());
  }
}

}  // namespace

Model to_onnx(const runtime::LoadedModel& loaded, const data::Normalization& normalization,
              const std::string& source) {
  const config::ModelConfig& spec = loaded.config.model;
  if (loaded.model.is_module())
    throw core::UserError(source + ": a model.torchscript run is exported by PyTorch, not by "
                          "gradshare: torch.onnx.export on its model.pt (torch.jit.load), "
                          "normalisation in its gradshare.json");
  GraphBuilder b;
  nn::Shape shape = spec.input_shape;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const config::LayerSpec& entry = spec.layers[i];
    const auto layer = nn::make_layer(entry, shape, i);
    const std::string type(layer->type());
    const std::string name = type + "_" + std::to_string(i);
    if (type == "dense") {
      if (shape.size() > 1) b.add("Flatten", {}, name + "_input", {{"axis", std::int64_t{1}}});
      b.add("Gemm", b.add_parameters(loaded.model, name), name);
    } else if (type == "conv2d") {
      const std::int64_t k = entry.kernel, s = entry.stride, p = entry.padding;
      b.add("Conv", b.add_parameters(loaded.model, name), name,
            {{"kernel_shape", Ints{k, k}}, {"strides", Ints{s, s}}, {"pads", Ints{p, p, p, p}}});
    } else if (type == "maxpool2d") {
      const std::int64_t pool = entry.pool, s = entry.stride == 0 ? pool : entry.stride;
      b.add("MaxPool", {}, name, {{"kernel_shape", Ints{pool, pool}}, {"strides", Ints{s, s}}});
    } else if (type == "flatten") {
      b.add("Flatten", {}, name, {{"axis", std::int64_t{1}}});
    } else if (type != "dropout") {
      throw core::UserError(source + ": " + nn::layer_location(entry, i) +
                            " cannot be exported to ONNX (supported: dense, conv2d, maxpool2d, "
                            "flatten, dropout)");
    }
    b.add_activation(layer->activation(), static_cast<float>(entry.alpha), name);
    shape = layer->output_shape();
  }
  b.add("Softmax", {}, "probabilities", {{"axis", std::int64_t{1}}});

  Model model;
  model.producer_name = "gradshare";
  model.producer_version = GRADSHARE_VERSION;
  model.doc_string = "gradshare model " + source +
                     "; input: features as (x - normalize_offset) * normalize_scale (see "
                     "metadata_props), output: class probabilities";
  model.graph = std::move(b.graph);
  model.graph.name = "gradshare";
  model.graph.inputs = {{"input", batch_of(spec.input_shape)}};
  model.graph.outputs = {{"probabilities", batch_of({spec.num_classes})}};

  const config::DataConfig& data = loaded.config.data;
  model.metadata = {
      {"gradshare_version", GRADSHARE_VERSION},
      {"trained_with_version", loaded.checkpoint.gradshare_version},
      {"source_model", source},
      {"iteration", std::to_string(loaded.checkpoint.iteration)},
      {"epoch", std::to_string(loaded.checkpoint.epoch)},
      {"dataset", data.dataset},
      {"input_shape", json_list(spec.input_shape)},
      {"num_classes", std::to_string(spec.num_classes)},
      {"normalize", data.normalize},
      {"normalize_offset", float_text(normalization.offset)},
      {"normalize_scale", float_text(normalization.scale)},
  };
  if (data.dataset == "fashion-mnist" && spec.num_classes == 10)
    model.metadata.emplace_back("class_labels", kFashionMnistLabels);
  return model;
}

int export_command(const std::string& model_path, const std::string& output_path,
                   const std::vector<std::string>& overrides) {
  const fs::path out(output_path);
  const fs::path directory = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  check_writable(out, directory);
  const runtime::LoadedModel loaded = runtime::load_model(model_path, overrides);
  const config::ExperimentConfig& config = loaded.config;
  const data::Normalization normalization =
      config.data.normalize == "none"
          ? data::Normalization{}
          : data::load_data(config.data, static_cast<std::uint64_t>(config.run.seed)).normalization;
  const Model model = to_onnx(loaded, normalization, model_path);
  write_file(out, directory, serialize(model));
  std::printf("exported %s (iteration %lld) to %s: %zu nodes, %zu parameters, opset %lld\n",
              model_path.c_str(), static_cast<long long>(loaded.checkpoint.iteration),
              output_path.c_str(), model.graph.nodes.size(), loaded.model.parameter_count(),
              static_cast<long long>(kOpsetVersion));
  std::printf("input normalisation (data.normalize %s): (x - %s) * %s\n",
              config.data.normalize.c_str(), float_text(normalization.offset).c_str(),
              float_text(normalization.scale).c_str());
  return 0;
}

}  // namespace gradshare::onnx
