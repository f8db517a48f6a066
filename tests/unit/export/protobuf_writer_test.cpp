#include "export/protobuf_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "proto_reader.h"

using gradshare::onnx::ProtoWriter;
namespace t = gradshare::onnx::testing;

namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// The examples of the protobuf encoding guide and the edge cases around them.
TEST(ProtoWriter, Varints) {
  ProtoWriter w;
  w.add_varint(1, 150);
  EXPECT_EQ(hex(w.bytes()), "08 96 01");

  ProtoWriter small;
  small.add_varint(1, 0);
  small.add_varint(1, 127);
  small.add_varint(1, 128);
  EXPECT_EQ(hex(small.bytes()), "08 00 08 7f 08 80 01");

  ProtoWriter big;
  big.add_varint(1, ~std::uint64_t{0});
  EXPECT_EQ(hex(big.bytes()), "08 ff ff ff ff ff ff ff ff ff 01");
}

TEST(ProtoWriter, NegativeIntsAreTenByteTwosComplement) {
  ProtoWriter w;
  w.add_int(2, -1);
  EXPECT_EQ(hex(w.bytes()), "10 ff ff ff ff ff ff ff ff ff 01");
  EXPECT_EQ(static_cast<std::int64_t>(t::one(w.bytes(), 2).value), -1);
}

TEST(ProtoWriter, KeysOfLargeFieldNumbers) {
  ProtoWriter w;
  w.add_int(20, 7);  // AttributeProto.type: field 20 needs a two-byte key
  w.add_int(15, 1);
  w.add_int(16, 1);
  EXPECT_EQ(hex(w.bytes()), "a0 01 07 78 01 80 01 01");
}

TEST(ProtoWriter, LengthDelimited) {
  ProtoWriter w;
  w.add_bytes(2, "testing");
  EXPECT_EQ(hex(w.bytes()), "12 07 74 65 73 74 69 6e 67");

  ProtoWriter empty;
  empty.add_bytes(3, "");
  EXPECT_EQ(hex(empty.bytes()), "1a 00");

  ProtoWriter inner;
  inner.add_varint(1, 150);
  ProtoWriter outer;
  outer.add_message(3, inner);
  EXPECT_EQ(hex(outer.bytes()), "1a 03 08 96 01");

  const std::string long_text(300, 'x');
  ProtoWriter longer;
  longer.add_bytes(1, long_text);
  EXPECT_EQ(hex(longer.bytes().substr(0, 3)), "0a ac 02");
  EXPECT_EQ(t::one(longer.bytes(), 1).bytes, long_text);
}

TEST(ProtoWriter, FloatsAreLittleEndianFixed32) {
  ProtoWriter w;
  w.add_float(2, 1.0f);
  w.add_float(2, -0.15625f);
  EXPECT_EQ(hex(w.bytes()), "15 00 00 80 3f 15 00 00 20 be");
  const auto fields = t::all(w.bytes(), 2);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[1].wire_type, 5);
  EXPECT_EQ(t::as_float(static_cast<std::uint32_t>(fields[1].value)), -0.15625f);

  std::string raw;
  gradshare::onnx::append_float_le(raw, 2.5f);
  EXPECT_EQ(hex(raw), "00 00 20 40");
}

}  // namespace
