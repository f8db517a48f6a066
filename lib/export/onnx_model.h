// onnx_model.h: the subset of the ONNX model format (onnx.proto, IR version 7) that an exported
// feed-forward network needs, and its serialisation to protobuf bytes.
//
//   ModelProto      1 ir_version, 8 opset_import {1 domain, 2 version}, 2 producer_name,
//                   3 producer_version, 6 doc_string, 7 graph,
//                   14 metadata_props {1 key, 2 value}
//   GraphProto      1 node, 2 name, 5 initializer, 11 input, 12 output
//   NodeProto       1 input, 2 output, 3 name, 4 op_type, 5 attribute
//   AttributeProto  1 name, 20 type (1 FLOAT, 2 INT, 7 INTS), 2 f, 3 i, 8 ints
//   TensorProto     1 dims, 2 data_type (1 FLOAT), 8 name, 9 raw_data (little-endian float32)
//   ValueInfoProto  1 name, 2 type: TypeProto {1 tensor_type: {1 elem_type, 2 shape:
//                   TensorShapeProto {1 dim: {1 dim_value | 2 dim_param}}}}
// Only float32 tensors and the default operator domain ("ai.onnx") are used.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gradshare::onnx {

inline constexpr std::int64_t kIrVersion = 7;  // ONNX 1.8, the release that introduced opset 13
inline constexpr std::int64_t kOpsetVersion = 13;

struct Attribute {
  std::string name;
  std::variant<float, std::int64_t, std::vector<std::int64_t>> value;
};

struct Node {
  std::string op_type;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
};

// A float32 initializer: dims and the values in row-major order.
struct Tensor {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<float> values;
};

// One dimension of a graph input or output: a fixed size, or a named symbolic one ("batch").
struct Dimension {
  std::int64_t size = 0;
  std::string symbol;  // used when not empty
};

// A float32 graph input or output.
struct ValueInfo {
  std::string name;
  std::vector<Dimension> shape;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;  // in topological order
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs, outputs;
};

struct Model {
  std::string producer_name, producer_version, doc_string;
  Graph graph;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props, in order
};

// The ModelProto bytes of `model` (ir_version kIrVersion, opset kOpsetVersion).
std::string serialize(const Model& model);

}  // namespace gradshare::onnx
