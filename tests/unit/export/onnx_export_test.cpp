#include "export/onnx_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "../config/temp_dir.h"
#include "ckpt/checkpoint.h"
#include "config/config_loader.h"
#include "core/errors.h"
#include "proto_reader.h"
#include "runtime/model_file.h"

namespace fs = std::filesystem;
namespace t = gradshare::onnx::testing;
using gradshare::config::testing::TempDir;
using gradshare::core::UserError;

namespace {

// conv2d -> maxpool2d -> dense (implicitly flattened) -> dropout -> dense, every activation kind.
constexpr const char* kCnn = R"(
data:
  normalize: none
model:
  input_shape: [1, 5, 5]
  num_classes: 3
  layers:
    - {type: conv2d, filters: 2, kernel: 3, stride: 2, padding: 1, activation: leaky_relu, alpha: 0.25}
    - {type: maxpool2d, pool: 2, stride: 1}
    - {type: dense, units: 4, activation: elu, alpha: 0.5}
    - {type: dropout, rate: 0.3}
    - {type: dense, units: 3, activation: tanh}
)";

// An explicit flatten, then ReLU and sigmoid.
constexpr const char* kFlatten = R"(
model:
  input_shape: [2, 3, 3]
  num_classes: 10
  layers:
    - {type: maxpool2d, pool: 2}
    - {type: flatten}
    - {type: dense, units: 6, activation: relu}
    - {type: dense, units: 10, activation: sigmoid}
)";

gradshare::runtime::LoadedModel loaded_model(const char* yaml) {
  auto config = gradshare::config::parse_experiment_text(yaml, "test.yaml");
  auto model = gradshare::nn::Model::build(config.model, 7);
  auto parameters = model.parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i)
    parameters[i] = 0.01f * static_cast<float>(i) - 0.5f;
  gradshare::ckpt::Checkpoint checkpoint;
  checkpoint.gradshare_version = "0.0.9";
  checkpoint.config_yaml = yaml;
  checkpoint.iteration = 42;
  checkpoint.epoch = 2;
  checkpoint.parameters.assign(parameters.begin(), parameters.end());
  for (const auto& v : model.parameter_views())
    checkpoint.views.push_back({v.layer, v.role, v.shape, v.offset, v.size});
  return {std::move(config), std::move(model), std::move(checkpoint)};
}

std::string serialized(const char* yaml, gradshare::data::Normalization normalization = {}) {
  return gradshare::onnx::serialize(
      gradshare::onnx::to_onnx(loaded_model(yaml), normalization, "model.h5"));
}

std::vector<std::string> strings(const std::string& message, int number) {
  std::vector<std::string> out;
  for (const auto& f : t::all(message, number)) out.push_back(f.bytes);
  return out;
}

std::vector<std::int64_t> ints(const std::string& message, int number) {
  std::vector<std::int64_t> out;
  for (const auto& f : t::all(message, number)) out.push_back(static_cast<std::int64_t>(f.value));
  return out;
}

// name -> AttributeProto bytes of one NodeProto.
std::map<std::string, std::string> attributes(const std::string& node) {
  std::map<std::string, std::string> out;
  for (const auto& a : t::all(node, 5)) out[t::one(a.bytes, 1).bytes] = a.bytes;
  return out;
}

std::map<std::string, std::string> metadata(const std::string& model) {
  std::map<std::string, std::string> out;
  for (const auto& entry : t::all(model, 14))
    out[t::one(entry.bytes, 1).bytes] = t::one(entry.bytes, 2).bytes;
  return out;
}

// The dims of a ValueInfoProto: dim_value, or -1 for a symbolic dim_param.
std::vector<std::int64_t> value_dims(const std::string& value_info, std::string* symbol) {
  const std::string tensor_type = t::one(t::one(value_info, 2).bytes, 1).bytes;
  EXPECT_EQ(t::one(tensor_type, 1).value, 1u);  // FLOAT
  std::vector<std::int64_t> dims;
  for (const auto& dim : t::all(t::one(tensor_type, 2).bytes, 1)) {
    const auto fields = t::decode(dim.bytes);
    if (fields.at(0).number == 2) {
      *symbol = fields.at(0).bytes;
      dims.push_back(-1);
    } else {
      dims.push_back(static_cast<std::int64_t>(fields.at(0).value));
    }
  }
  return dims;
}

TEST(OnnxExport, ModelHeaderAndMetadata) {
  const std::string bytes = serialized(kCnn, {33.3f, 0.0123f});
  EXPECT_EQ(t::one(bytes, 1).value, 7u);  // ir_version
  const std::string opset = t::one(bytes, 8).bytes;
  EXPECT_EQ(t::one(opset, 1).bytes, "");
  EXPECT_EQ(t::one(opset, 2).value, 13u);
  EXPECT_EQ(t::one(bytes, 2).bytes, "gradshare");
  EXPECT_EQ(t::one(bytes, 3).bytes, GRADSHARE_VERSION);

  const auto meta = metadata(bytes);
  EXPECT_EQ(meta.at("gradshare_version"), GRADSHARE_VERSION);
  EXPECT_EQ(meta.at("trained_with_version"), "0.0.9");
  EXPECT_EQ(meta.at("source_model"), "model.h5");
  EXPECT_EQ(meta.at("iteration"), "42");
  EXPECT_EQ(meta.at("epoch"), "2");
  EXPECT_EQ(meta.at("input_shape"), "[1, 5, 5]");
  EXPECT_EQ(meta.at("num_classes"), "3");
  EXPECT_EQ(meta.at("normalize"), "none");
  // The printed values read back as the same float32.
  EXPECT_EQ(std::stof(meta.at("normalize_offset")), 33.3f);
  EXPECT_EQ(std::stof(meta.at("normalize_scale")), 0.0123f);
  EXPECT_EQ(meta.count("class_labels"), 0u);  // 3 classes: not Fashion-MNIST's

  const auto labels = metadata(serialized(kFlatten)).at("class_labels");
  EXPECT_EQ(labels.substr(0, 16), "[\"T-shirt/top\", ");
  EXPECT_EQ(std::count(labels.begin(), labels.end(), '"'), 20);
}

TEST(OnnxExport, GraphNodesInputsAndOutputs) {
  const std::string graph = t::one(serialized(kCnn), 7).bytes;
  std::vector<std::string> ops, node_bytes;
  for (const auto& node : t::all(graph, 1)) {
    ops.push_back(t::one(node.bytes, 4).bytes);
    node_bytes.push_back(node.bytes);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "LeakyRelu", "MaxPool", "Flatten", "Gemm", "Elu",
                                           "Gemm", "Tanh", "Softmax"}));
  // Each node reads the previous one's output.
  EXPECT_EQ(strings(node_bytes[0], 1),
            (std::vector<std::string>{"input", "conv2d_0_kernel", "conv2d_0_bias"}));
  for (std::size_t i = 1; i < node_bytes.size(); ++i)
    EXPECT_EQ(strings(node_bytes[i], 1).at(0), strings(node_bytes[i - 1], 2).at(0)) << ops[i];
  EXPECT_EQ(strings(node_bytes[4], 1),
            (std::vector<std::string>{"dense_2_input", "dense_2_kernel", "dense_2_bias"}));
  EXPECT_EQ(strings(node_bytes.back(), 2), std::vector<std::string>{"probabilities"});

  auto conv = attributes(node_bytes[0]);
  EXPECT_EQ(ints(conv.at("kernel_shape"), 8), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(ints(conv.at("strides"), 8), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ints(conv.at("pads"), 8), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(t::one(conv.at("pads"), 20).value, 7u);  // INTS
  auto leaky = attributes(node_bytes[1]);
  EXPECT_EQ(t::one(leaky.at("alpha"), 20).value, 1u);  // FLOAT
  EXPECT_EQ(t::as_float(static_cast<std::uint32_t>(t::one(leaky.at("alpha"), 2).value)), 0.25f);
  auto pool = attributes(node_bytes[2]);
  EXPECT_EQ(ints(pool.at("kernel_shape"), 8), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ints(pool.at("strides"), 8), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(t::as_float(static_cast<std::uint32_t>(
                t::one(attributes(node_bytes[5]).at("alpha"), 2).value)),
            0.5f);
  const auto softmax = attributes(node_bytes.back()).at("axis");
  EXPECT_EQ(t::one(softmax, 20).value, 2u);  // INT
  EXPECT_EQ(t::one(softmax, 3).value, 1u);

  std::string symbol;
  EXPECT_EQ(t::one(t::one(graph, 11).bytes, 1).bytes, "input");
  EXPECT_EQ(value_dims(t::one(graph, 11).bytes, &symbol), (std::vector<std::int64_t>{-1, 1, 5, 5}));
  EXPECT_EQ(symbol, "batch");
  EXPECT_EQ(t::one(t::one(graph, 12).bytes, 1).bytes, "probabilities");
  EXPECT_EQ(value_dims(t::one(graph, 12).bytes, &symbol), (std::vector<std::int64_t>{-1, 3}));
}

TEST(OnnxExport, ExplicitFlattenAndActivations) {
  const std::string graph = t::one(serialized(kFlatten), 7).bytes;
  std::vector<std::string> ops;
  for (const auto& node : t::all(graph, 1)) ops.push_back(t::one(node.bytes, 4).bytes);
  EXPECT_EQ(ops, (std::vector<std::string>{"MaxPool", "Flatten", "Gemm", "Relu", "Gemm", "Sigmoid",
                                           "Softmax"}));
  const auto pool = attributes(t::all(graph, 1).at(0).bytes);
  EXPECT_EQ(ints(pool.at("strides"), 8), (std::vector<std::int64_t>{2, 2}));  // stride 0 = pool
}

TEST(OnnxExport, InitializersHoldTheParametersInTheirLayout) {
  const auto loaded = loaded_model(kCnn);
  const std::string graph =
      t::one(gradshare::onnx::serialize(gradshare::onnx::to_onnx(loaded, {}, "m.h5")), 7).bytes;
  const auto initializers = t::all(graph, 5);
  const auto& views = loaded.model.parameter_views();
  ASSERT_EQ(initializers.size(), views.size());
  const auto parameters = loaded.model.parameters();
  for (std::size_t i = 0; i < views.size(); ++i) {
    const std::string& tensor = initializers[i].bytes;
    SCOPED_TRACE(views[i].layer + "/" + views[i].role);
    EXPECT_EQ(t::one(tensor, 8).bytes, views[i].layer + "_" + views[i].role);
    EXPECT_EQ(t::one(tensor, 2).value, 1u);  // FLOAT
    EXPECT_EQ(ints(tensor, 1), views[i].shape);
    const std::string raw = t::one(tensor, 9).bytes;
    ASSERT_EQ(raw.size(), 4 * views[i].size);
    for (std::size_t j = 0; j < views[i].size; ++j) {
      std::uint32_t bits = 0;
      for (int b = 0; b < 4; ++b)
        bits |= std::uint32_t{static_cast<std::uint8_t>(raw[4 * j + b])} << (8 * b);
      ASSERT_EQ(t::as_float(bits), parameters[views[i].offset + j]) << j;
    }
  }
  // Dense kernels stay [inputs, units] (Gemm's B), conv kernels [filters, channels, k, k].
  EXPECT_EQ(ints(initializers[0].bytes, 1), (std::vector<std::int64_t>{2, 1, 3, 3}));
  EXPECT_EQ(ints(initializers[2].bytes, 1), (std::vector<std::int64_t>{8, 4}));
}

class ExportCommand : public ::testing::Test {
 protected:
  std::string write_model(const char* yaml) const {
    const auto loaded = loaded_model(yaml);
    const std::string path = (dir_.path() / "model.h5").string();
    gradshare::ckpt::write_checkpoint(path, loaded.checkpoint);
    return path;
  }
  std::string out() const { return (dir_.path() / "model.onnx").string(); }
  // Only the model file: no output, no temporary left behind.
  void expect_nothing_written() const {
    for (const auto& entry : fs::directory_iterator(dir_.path()))
      EXPECT_EQ(entry.path().extension(), ".h5") << entry.path();
  }

  TempDir dir_;
};

TEST_F(ExportCommand, WritesTheModel) {
  const std::string model = write_model(kCnn);
  EXPECT_EQ(gradshare::onnx::export_command(model, out(), {}), 0);
  std::ifstream in(out(), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(bytes, gradshare::onnx::serialize(gradshare::onnx::to_onnx(loaded_model(kCnn), {}, model)));
  for (const auto& entry : fs::directory_iterator(dir_.path()))
    EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
}

TEST_F(ExportCommand, MalformedOrMissingModelIsAUserError) {
  const std::string bad = (dir_.path() / "bad.h5").string();
  std::ofstream(bad) << "not an HDF5 file";
  EXPECT_THROW(gradshare::onnx::export_command(bad, out(), {}), UserError);
  EXPECT_THROW(gradshare::onnx::export_command((dir_.path() / "missing.h5").string(), out(), {}),
               UserError);
  expect_nothing_written();
}

TEST_F(ExportCommand, UnwritableOutputIsAUserErrorNamingIt) {
  const std::string model = write_model(kCnn);
  const std::string nowhere = (dir_.path() / "no-such-dir" / "m.onnx").string();
  try {
    gradshare::onnx::export_command(model, nowhere, {});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(nowhere), std::string::npos) << e.what();
  }
  EXPECT_THROW(gradshare::onnx::export_command(model, dir_.path().string(), {}), UserError);
  expect_nothing_written();
}

}  // namespace
