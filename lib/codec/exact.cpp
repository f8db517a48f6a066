#include "codec/exact.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/errors.h"

namespace gradshare::codec {

namespace {

struct Record {
  std::uint32_t index;
  float value;
};

Record record_at(std::span<const std::uint8_t> payload, std::size_t e) {
  Record r;
  std::memcpy(&r.index, payload.data() + kExactEntryBytes * e, 4);
  std::memcpy(&r.value, payload.data() + kExactEntryBytes * e + 4, 4);
  return r;
}

}  // namespace

void encode_exact(std::span<const float> values, std::span<const std::uint32_t> indices,
                  const MessageMeta& meta, std::vector<std::uint8_t>& out) {
  std::string error;
  GS_CHECK(check_meta(meta, &error), error);
  out.resize(kHeaderBytes + kExactEntryBytes * indices.size());
  for (std::size_t e = 0; e < indices.size(); ++e) {
    GS_CHECK(indices[e] < values.size() && (e == 0 || indices[e] > indices[e - 1]),
             "exact message indices must ascend within the parameters");
    std::memcpy(out.data() + kHeaderBytes + kExactEntryBytes * e, &indices[e], 4);
    std::memcpy(out.data() + kHeaderBytes + kExactEntryBytes * e + 4, &values[indices[e]], 4);
  }
  MessageHeader header;
  header.encoding = Encoding::kExact;
  header.flags = meta.flags;
  header.origin = meta.origin;
  header.seq = meta.seq;
  header.iteration = meta.iteration;
  header.epoch = meta.epoch;
  header.tau = 1.0f;
  header.parameter_count = values.size();
  header.entry_count = indices.size();
  header.payload_bytes = kExactEntryBytes * indices.size();
  seal_message(header, out);
}

std::vector<std::uint32_t> encode_exact_pieces(std::span<const float> values, MessageMeta meta,
                                               std::uint32_t last_flags, std::size_t max_bytes,
                                               std::vector<std::vector<std::uint8_t>>& out) {
  GS_CHECK(max_bytes >= kHeaderBytes + kExactEntryBytes,
           "message limit of " + std::to_string(max_bytes) + " bytes holds no exact entry");
  std::vector<std::uint32_t> nonzero;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != 0.0f) nonzero.push_back(static_cast<std::uint32_t>(i));
  const std::size_t per_message = (max_bytes - kHeaderBytes) / kExactEntryBytes;
  const std::uint32_t flags = meta.flags;
  std::size_t begin = 0;
  do {
    const std::size_t end = std::min(nonzero.size(), begin + per_message);
    meta.flags = end == nonzero.size() ? flags | last_flags : flags;
    out.emplace_back();
    encode_exact(values, std::span<const std::uint32_t>(nonzero.data() + begin, end - begin),
                 meta, out.back());
    ++meta.seq;
    begin = end;
  } while (begin < nonzero.size());
  return nonzero;
}

bool validate_exact(std::span<const std::uint8_t> payload, std::size_t count, std::size_t n,
                    std::string* error) {
  if (payload.size() != kExactEntryBytes * count) {
    if (error) *error = "exact payload of " + std::to_string(payload.size()) + " bytes for " +
                        std::to_string(count) + " entries";
    return false;
  }
  for (std::size_t e = 0; e < count; ++e) {
    const Record r = record_at(payload, e);
    if (r.index >= n || (e > 0 && r.index <= record_at(payload, e - 1).index)) {
      if (error) *error = "exact entry " + std::to_string(e) + ": index " +
                          std::to_string(r.index) + " out of order or beyond " + std::to_string(n);
      return false;
    }
    if (!std::isfinite(r.value) || r.value == 0.0f) {
      if (error) *error = "exact entry " + std::to_string(e) + ": value zero or not finite";
      return false;
    }
  }
  return true;
}

void apply_exact(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                 float sign) {
  for (std::size_t e = 0; e < count; ++e) {
    const Record r = record_at(payload, e);
    target[r.index] += sign * r.value;
  }
}

void exact_entries(std::span<const std::uint8_t> payload, std::size_t count,
                   std::vector<std::uint32_t>& indices, std::vector<float>& values) {
  for (std::size_t e = 0; e < count; ++e) {
    const Record r = record_at(payload, e);
    indices.push_back(r.index);
    values.push_back(r.value);
  }
}

}  // namespace gradshare::codec
