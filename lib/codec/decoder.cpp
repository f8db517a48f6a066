// decoder.cpp: validate-then-apply for every encoding.
#include "codec/decoder.h"

#include <array>
#include <cstring>
#include <string>

#include "codec/exact.h"
#include "codec/message.h"
#include "codec/values.h"
#include "kernels/cpu/codec_decode.h"
#include "kernels/cpu/codec_rice.h"

namespace gradshare::codec {
namespace {

namespace cpu = kernels::cpu;

// What each 2-bit code of a bitmap message adds, times `sign` (codec_bitmap_layout.h's order:
// none, +tau, -tau, the message's half quantum).
std::array<float, 4> bitmap_code_values(const MessageHeader& header, float sign) {
  // Same expression as the encoder's, so the half quantum is the very float it subtracted.
  const float half = header.tau * 0.5f;
  const float half_value = (header.flags & kFlagHalfNegative) != 0 ? -half : half;
  return {0.0f, sign * header.tau, -(sign * header.tau), sign * half_value};
}

// Adds `sign` * value of every entry of a message whose header is checked to target (sign -1:
// apply, +1: accumulate), once its payload's structure is valid.
bool decode_payload(const MessageHeader& header, std::span<const std::uint8_t> message,
                    std::span<float> target, float sign, std::string* error) {
  const auto payload = message.subspan(kHeaderBytes);
  const auto count = static_cast<std::size_t>(header.entry_count);
  const float plus = sign * header.tau;
  const float minus = -plus;
  switch (header.encoding) {
    case Encoding::kSparse:
      if (!cpu::validate_sparse(payload, count, target.size(), error)) return false;
      cpu::apply_sparse(payload, count, target, plus, minus);
      return true;
    case Encoding::kCompressed:
      if (!cpu::rice_validate(payload, count, target.size(), error)) return false;
      cpu::rice_apply(payload, count, target, plus, minus);
      return true;
    case Encoding::kBitmap: {
      const bool shake_up = (header.flags & kFlagShakeUp) != 0;
      if (!cpu::validate_bitmap(payload, target.size(), count, shake_up, error)) return false;
      cpu::apply_bitmap(payload, target, bitmap_code_values(header, sign));
      return true;
    }
    case Encoding::kExact:
      if (!validate_exact(payload, count, target.size(), error)) return false;
      apply_exact(payload, count, target, sign);
      return true;
    case Encoding::kValues: {
      std::vector<ValueEntry> entries;
      if (!decode_values(payload, count, target.size(), entries, error)) return false;
      for (const ValueEntry& e : entries) target[e.index] += sign * e.value;
      return true;
    }
  }
  return false;  // unreachable: parse_header accepts only the five encodings
}

bool decode_into(std::span<const std::uint8_t> message, std::span<float> target, float sign,
                 std::string* error) {
  MessageHeader header;
  if (!parse_header(message, target.size(), header, error)) return false;
  return decode_payload(header, message, target, sign, error);
}

bool decode_parsed(const ParsedMessage& message, std::span<float> target, float sign,
                   std::string* error) {
  if (message.header.parameter_count != target.size()) {
    if (error) *error = "message for " + std::to_string(message.header.parameter_count) +
                        " parameters applied to " + std::to_string(target.size());
    return false;
  }
  return decode_payload(message.header, message.bytes, target, sign, error);
}

}  // namespace

bool parse_message(std::span<const std::uint8_t> bytes, std::size_t expected_parameter_count,
                   ParsedMessage& out, std::string* error) {
  if (!parse_header(bytes, expected_parameter_count, out.header, error)) return false;
  out.bytes = bytes;
  return true;
}

bool apply_parsed(const ParsedMessage& message, std::span<float> parameters, std::string* error) {
  return decode_parsed(message, parameters, -1.0f, error);
}

bool accumulate_parsed(const ParsedMessage& message, std::span<float> accumulator,
                       std::string* error) {
  return decode_parsed(message, accumulator, 1.0f, error);
}

bool entry_values(const ParsedMessage& message, std::vector<std::uint32_t>& indices,
                  std::vector<float>& values, std::string* error) {
  const auto& header = message.header;
  const auto payload = message.bytes.subspan(kHeaderBytes);
  const auto count = static_cast<std::size_t>(header.entry_count);
  const auto n = static_cast<std::size_t>(header.parameter_count);
  // The values decode_payload adds with sign +1.
  const float plus = header.tau, minus = -header.tau;
  const auto signed_entry = [&](std::int64_t v) {
    indices.push_back(static_cast<std::uint32_t>(v > 0 ? v : -v) - 1);
    values.push_back(v < 0 ? minus : plus);
  };
  switch (header.encoding) {
    case Encoding::kSparse: {
      if (!cpu::validate_sparse(payload, count, n, error)) return false;
      for (std::size_t e = 0; e < count; ++e) {
        std::int32_t v;
        std::memcpy(&v, payload.data() + 4 * e, 4);
        signed_entry(v);
      }
      return true;
    }
    case Encoding::kCompressed: {
      std::vector<std::int32_t> signed_indices;
      if (!cpu::rice_decode(payload, count, n, signed_indices, error)) return false;
      for (const std::int32_t v : signed_indices) signed_entry(v);
      return true;
    }
    case Encoding::kBitmap: {
      const bool shake_up = (header.flags & kFlagShakeUp) != 0;
      if (!cpu::validate_bitmap(payload, n, count, shake_up, error)) return false;
      const auto code_value = bitmap_code_values(header, 1.0f);
      for (std::size_t b = 0; b < payload.size(); ++b) {
        if (payload[b] == 0) continue;
        for (std::size_t k = 0; k < 4; ++k)
          if (const unsigned code = (payload[b] >> (2 * k)) & 3u; code != 0) {
            indices.push_back(static_cast<std::uint32_t>(4 * b + k));
            values.push_back(code_value[code]);
          }
      }
      return true;
    }
    case Encoding::kExact:
      if (!validate_exact(payload, count, n, error)) return false;
      exact_entries(payload, count, indices, values);
      return true;
    case Encoding::kValues: {
      std::vector<ValueEntry> entries;
      if (!decode_values(payload, count, n, entries, error)) return false;
      for (const ValueEntry& e : entries) {
        indices.push_back(e.index);
        values.push_back(e.value);
      }
      return true;
    }
  }
  return false;  // unreachable: parse_header accepts only the five encodings
}

bool apply_message(std::span<const std::uint8_t> message, std::span<float> parameters,
                   std::string* error) {
  return decode_into(message, parameters, -1.0f, error);
}

bool accumulate_message(std::span<const std::uint8_t> message, std::span<float> accumulator,
                        std::string* error) {
  return decode_into(message, accumulator, 1.0f, error);
}

}  // namespace gradshare::codec
