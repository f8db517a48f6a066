#include "codec/values.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "codec/message.h"
#include "core/errors.h"
#include "kernels/cpu/codec_rice.h"

namespace gradshare::codec {
namespace {

namespace cpu = kernels::cpu;

constexpr std::uint16_t kExponentMask = 0x7F80;
constexpr std::uint16_t kSignBit = 0x8000;

std::uint16_t magnitude_at(std::span<const std::uint8_t> payload, std::size_t e) {
  std::uint16_t bits;
  std::memcpy(&bits, payload.data() + 2 * e, 2);
  return bits;
}

}  // namespace

std::uint16_t to_bfloat16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  // Round to nearest, ties to even, on the 16 bits dropped.
  const std::uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  auto result = static_cast<std::uint16_t>(rounded >> 16);
  if ((result & kExponentMask) == kExponentMask)  // rounded up to infinity: truncate instead
    result = static_cast<std::uint16_t>(bits >> 16);
  return result;
}

float from_bfloat16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::size_t values_payload_bound(std::size_t count, std::size_t n) {
  // rice_choose's bound: 2 + count * (log2(n / count) + 4) / 8 bytes, at most
  // 2 + count * (log2 n + 4) / 8.
  const std::size_t index_bits = static_cast<std::size_t>(std::bit_width(n)) + 4;
  return 2 * count + 2 + (count * index_bits + 7) / 8;
}

std::size_t values_entries_within(std::size_t payload_bytes, std::size_t n) {
  const std::size_t index_bits = static_cast<std::size_t>(std::bit_width(n)) + 4;
  if (payload_bytes < 2) return 0;
  std::size_t count = (payload_bytes - 2) * 8 / (16 + index_bits) + 1;
  while (count > 0 && values_payload_bound(count, n) > payload_bytes) --count;
  return count;
}

void write_values_payload(std::span<float> residual, std::span<const std::uint32_t> indices,
                          std::vector<std::uint8_t>& out) {
  std::vector<std::int32_t> signed_index(indices.size());
  out.resize(kHeaderBytes + 2 * indices.size());
  for (std::size_t e = 0; e < indices.size(); ++e) {
    const std::uint32_t i = indices[e];
    GS_CHECK(i < residual.size() && (e == 0 || i > indices[e - 1]),
             "values message indices must ascend within the parameters");
    const float value = residual[i];
    GS_CHECK(std::isnormal(value), "a values entry must be a normal float (finite, not zero)");
    const std::uint16_t bits = to_bfloat16(value);
    const auto magnitude = static_cast<std::uint16_t>(bits & ~kSignBit);
    std::memcpy(out.data() + kHeaderBytes + 2 * e, &magnitude, 2);
    residual[i] = value - from_bfloat16(bits);  // exact: the bits rounding dropped
    const auto index = static_cast<std::int32_t>(i + 1);
    signed_index[e] = (bits & kSignBit) != 0 ? -index : index;
  }
  const auto rice = cpu::rice_choose(signed_index);
  const std::size_t rice_at = out.size();
  out.resize(rice_at + rice.payload_bytes);
  cpu::rice_encode(signed_index, rice.k, std::span(out).subspan(rice_at));
}

bool decode_values(std::span<const std::uint8_t> payload, std::size_t count, std::size_t n,
                   std::vector<ValueEntry>& entries, std::string* error) {
  if (payload.size() < 2 * count + 1) {
    if (error) *error = "values payload of " + std::to_string(payload.size()) +
                        " bytes for " + std::to_string(count) + " entries";
    return false;
  }
  for (std::size_t e = 0; e < count; ++e) {
    const std::uint16_t bits = magnitude_at(payload, e);
    if ((bits & kSignBit) != 0 || (bits & kExponentMask) == kExponentMask || bits == 0) {
      if (error) *error = "values entry " + std::to_string(e) +
                          ": magnitude negative, zero or not finite";
      return false;
    }
  }
  std::vector<std::int32_t> indices;  // rice_decode validates the stream as it reads it
  if (!cpu::rice_decode(payload.subspan(2 * count), count, n, indices, error)) return false;
  entries.resize(count);
  for (std::size_t e = 0; e < count; ++e) {
    const float magnitude = from_bfloat16(magnitude_at(payload, e));
    entries[e] = {static_cast<std::uint32_t>(std::abs(indices[e]) - 1),
                  indices[e] < 0 ? -magnitude : magnitude};
  }
  return true;
}

}  // namespace gradshare::codec
