// wire_fields_test.cpp: payloads that list their fields travel field by field in that order,
// nested payloads included, and a malformed one is refused as ByteReader refuses it.
#include "comm/wire_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"

namespace gradshare::comm {
namespace {

// Written and read by hand: a payload of its own inside one with fields.
struct Hand {
  std::int32_t value = 0;
  void write(ByteWriter& writer) const { writer.put(value + 1000); }
  static Hand read(ByteReader& reader) { return {reader.get<std::int32_t>() - 1000}; }
};

struct Inner {
  bool flag = false;
  std::vector<float> values;
  static auto fields(auto& self) { return std::tie(self.flag, self.values); }
};

struct Outer {
  std::int64_t step = 0;
  std::string why;
  Inner inner;
  Hand hand;
  std::uint8_t last = 0;
  static auto fields(auto& self) {
    return std::tie(self.step, self.why, self.inner, self.hand, self.last);
  }
};

Outer sample() { return {-3, "rank 2 failed", {true, {1.5f, -2.0f}}, {7}, 9}; }

TEST(WireFields, TheFieldsTravelInTheirListsOrder) {
  ByteWriter writer;
  write_payload(writer, sample());
  const auto bytes = writer.take();
  // The same bytes as writing each field by hand, in the list's order.
  ByteWriter by_hand;
  by_hand.put<std::int64_t>(-3).put_string("rank 2 failed").put(true);
  by_hand.put_vector(std::vector<float>{1.5f, -2.0f}).put<std::int32_t>(1007).put<std::uint8_t>(9);
  EXPECT_EQ(bytes, by_hand.take());

  ByteReader reader(bytes);
  const Outer back = read_payload<Outer>(reader);
  reader.expect_end();
  EXPECT_EQ(back.step, -3);
  EXPECT_EQ(back.why, "rank 2 failed");
  EXPECT_TRUE(back.inner.flag);
  EXPECT_EQ(back.inner.values, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(back.hand.value, 7);
  EXPECT_EQ(back.last, 9);
}

TEST(WireFields, AMalformedPayloadIsRefused) {
  ByteWriter writer;
  write_payload(writer, sample());
  auto bytes = writer.take();
  // The bool after the string's 8-byte length and 13 characters, and the step's 8 bytes.
  bytes[8 + 8 + 13] = 2;
  ByteReader not_a_bool(bytes);
  EXPECT_THROW(read_payload<Outer>(not_a_bool), core::RuntimeError);
  bytes[8 + 8 + 13] = 1;
  bytes.resize(bytes.size() - 1);  // without the last field
  ByteReader short_one(bytes);
  EXPECT_THROW(read_payload<Outer>(short_one), core::RuntimeError);
}

}  // namespace
}  // namespace gradshare::comm
