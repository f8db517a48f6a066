// protobuf_writer.h: the Protocol Buffers wire format, write side only (enough for ONNX).
//
// A message is a sequence of fields, each a key followed by a value; the key is the varint
// (field_number << 3) | wire_type. The wire types used here:
//   0 varint            unsigned LEB128: 7 bits per byte, least significant group first, the
//                       high bit set on every byte but the last. int32/int64/enum values are
//                       written as their 64-bit two's complement (a negative one takes 10 bytes)
//   2 length-delimited  varint byte count, then the bytes: strings, bytes, embedded messages
//                       and packed repeated scalars
//   5 fixed32           4 bytes little-endian: float
// A repeated field is its field written once per element, in order (proto2's unpacked form,
// which every parser accepts). Fields appear in the order they are added.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gradshare::onnx {

class ProtoWriter {
 public:
  void add_varint(int field, std::uint64_t value);
  void add_int(int field, std::int64_t value) { add_varint(field, static_cast<std::uint64_t>(value)); }
  void add_float(int field, float value);
  void add_bytes(int field, std::string_view bytes);
  void add_message(int field, const ProtoWriter& message) { add_bytes(field, message.bytes()); }

  const std::string& bytes() const { return out_; }

 private:
  void key(int field, int wire_type);
  void varint(std::uint64_t value);

  std::string out_;
};

// Appends `value` as 4 little-endian bytes (a float's wire form, and ONNX raw_data's).
void append_float_le(std::string& out, float value);

}  // namespace gradshare::onnx
