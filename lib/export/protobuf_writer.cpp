#include "export/protobuf_writer.h"

#include <bit>

namespace gradshare::onnx {

void ProtoWriter::varint(std::uint64_t value) {
  while (value >= 0x80) {
    out_ += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out_ += static_cast<char>(value);
}

void ProtoWriter::key(int field, int wire_type) {
  varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wire_type));
}

void ProtoWriter::add_varint(int field, std::uint64_t value) {
  key(field, 0);
  varint(value);
}

void ProtoWriter::add_float(int field, float value) {
  key(field, 5);
  append_float_le(out_, value);
}

void ProtoWriter::add_bytes(int field, std::string_view bytes) {
  key(field, 2);
  varint(bytes.size());
  out_.append(bytes);
}

void append_float_le(std::string& out, float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((bits >> shift) & 0xff);
}

}  // namespace gradshare::onnx
