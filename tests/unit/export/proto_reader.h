// proto_reader.h: a minimal protobuf wire-format decoder for the tests (varint, fixed32 and
// length-delimited fields), written independently of the writer it checks.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gradshare::onnx::testing {

struct Field {
  int number = 0;
  int wire_type = 0;
  std::uint64_t value = 0;  // varint, or the fixed32 bits
  std::string bytes;        // length-delimited
};

inline std::uint64_t read_varint(std::string_view data, std::size_t& pos) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= data.size()) throw std::runtime_error("truncated varint");
    const auto byte = static_cast<std::uint8_t>(data[pos++]);
    value |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
  throw std::runtime_error("varint longer than 10 bytes");
}

// Every field of one message, in order; throws on malformed input.
inline std::vector<Field> decode(std::string_view data) {
  std::vector<Field> fields;
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::uint64_t key = read_varint(data, pos);
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire_type = static_cast<int>(key & 7);
    if (f.wire_type == 0) {
      f.value = read_varint(data, pos);
    } else if (f.wire_type == 2) {
      const std::uint64_t size = read_varint(data, pos);
      if (size > data.size() - pos) throw std::runtime_error("truncated field");
      f.bytes = std::string(data.substr(pos, size));
      pos += size;
    } else if (f.wire_type == 5) {
      if (data.size() - pos < 4) throw std::runtime_error("truncated fixed32");
      for (int i = 0; i < 4; ++i)
        f.value |= std::uint64_t{static_cast<std::uint8_t>(data[pos + i])} << (8 * i);
      pos += 4;
    } else {
      throw std::runtime_error("unexpected wire type " + std::to_string(f.wire_type));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

inline std::vector<Field> all(std::string_view message, int number) {
  std::vector<Field> out;
  for (Field& f : decode(message))
    if (f.number == number) out.push_back(std::move(f));
  return out;
}

// The one field `number` of a message; throws unless there is exactly one.
inline Field one(std::string_view message, int number) {
  auto fields = all(message, number);
  if (fields.size() != 1)
    throw std::runtime_error("field " + std::to_string(number) + " occurs " +
                             std::to_string(fields.size()) + " times");
  return fields.front();
}

inline float as_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace gradshare::onnx::testing
