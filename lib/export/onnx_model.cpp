#include "export/onnx_model.h"

#include "export/protobuf_writer.h"

namespace gradshare::onnx {
namespace {

// Field numbers and enum values of onnx.proto.
enum AttributeType { kAttributeFloat = 1, kAttributeInt = 2, kAttributeInts = 7 };
constexpr std::int64_t kFloat = 1;  // TensorProto.DataType.FLOAT

ProtoWriter attribute(const Attribute& a) {
  ProtoWriter out;
  out.add_bytes(1, a.name);
  if (const auto* f = std::get_if<float>(&a.value)) {
    out.add_int(20, kAttributeFloat);
    out.add_float(2, *f);
  } else if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
    out.add_int(20, kAttributeInt);
    out.add_int(3, *i);
  } else {
    out.add_int(20, kAttributeInts);
    for (std::int64_t v : std::get<std::vector<std::int64_t>>(a.value)) out.add_int(8, v);
  }
  return out;
}

ProtoWriter node(const Node& n) {
  ProtoWriter out;
  for (const auto& name : n.inputs) out.add_bytes(1, name);
  for (const auto& name : n.outputs) out.add_bytes(2, name);
  out.add_bytes(4, n.op_type);
  for (const auto& a : n.attributes) out.add_message(5, attribute(a));
  return out;
}

ProtoWriter tensor(const Tensor& t) {
  ProtoWriter out;
  for (std::int64_t d : t.dims) out.add_int(1, d);
  out.add_int(2, kFloat);
  out.add_bytes(8, t.name);
  std::string raw;
  raw.reserve(4 * t.values.size());
  for (float v : t.values) append_float_le(raw, v);
  out.add_bytes(9, raw);
  return out;
}

ProtoWriter value_info(const ValueInfo& v) {
  ProtoWriter shape;
  for (const Dimension& d : v.shape) {
    ProtoWriter dim;
    if (d.symbol.empty()) {
      dim.add_int(1, d.size);
    } else {
      dim.add_bytes(2, d.symbol);
    }
    shape.add_message(1, dim);
  }
  ProtoWriter tensor_type;
  tensor_type.add_int(1, kFloat);
  tensor_type.add_message(2, shape);
  ProtoWriter type;
  type.add_message(1, tensor_type);
  ProtoWriter out;
  out.add_bytes(1, v.name);
  out.add_message(2, type);
  return out;
}

ProtoWriter graph(const Graph& g) {
  ProtoWriter out;
  for (const Node& n : g.nodes) out.add_message(1, node(n));
  out.add_bytes(2, g.name);
  for (const Tensor& t : g.initializers) out.add_message(5, tensor(t));
  for (const ValueInfo& v : g.inputs) out.add_message(11, value_info(v));
  for (const ValueInfo& v : g.outputs) out.add_message(12, value_info(v));
  return out;
}

}  // namespace

std::string serialize(const Model& model) {
  ProtoWriter out;
  out.add_int(1, kIrVersion);
  out.add_bytes(2, model.producer_name);
  out.add_bytes(3, model.producer_version);
  out.add_bytes(6, model.doc_string);
  out.add_message(7, graph(model.graph));
  ProtoWriter opset;
  opset.add_bytes(1, "");
  opset.add_int(2, kOpsetVersion);
  out.add_message(8, opset);
  for (const auto& [key, value] : model.metadata) {
    ProtoWriter entry;
    entry.add_bytes(1, key);
    entry.add_bytes(2, value);
    out.add_message(14, entry);
  }
  return out.bytes();
}

}  // namespace gradshare::onnx
