// exact.h: the exact encoding (Encoding::kExact), which carries values instead of quanta. An
// aggregating relay flushes a link's relay residual with it (train/sharing/aggregating_relay.h):
// what stays below tau would otherwise stay there, so the last message of a flush carries
// every remaining element as it is and the link's residual ends at zero. (Its other messages
// are codec/values.h's, rounded to bfloat16.)
//
//   payload   entry_count records of 8 bytes: uint32 0-based parameter index (strictly
//             increasing), float32 value (finite, not zero); the header's tau is 1 and means
//             nothing
//
// Values are added to an accumulator and subtracted from parameters, as quanta are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codec/message.h"

namespace gradshare::codec {

inline constexpr std::size_t kExactEntryBytes = 8;

// The message carrying values[i] for every listed index (ascending, < values.size()); the
// caller keeps the message within its limit by how many indices it passes.
void encode_exact(std::span<const float> values, std::span<const std::uint32_t> indices,
                  const MessageMeta& meta, std::vector<std::uint8_t>& out);

// Every nonzero values[i] in exact messages of at most max_bytes each, appended to `out`:
// seqs meta.seq, meta.seq + 1, ...; the last piece's flags add last_flags. At least one message
// (all zero: one without entries). Returns the indices carried, ascending.
std::vector<std::uint32_t> encode_exact_pieces(std::span<const float> values, MessageMeta meta,
                                               std::uint32_t last_flags, std::size_t max_bytes,
                                               std::vector<std::vector<std::uint8_t>>& out);

// Whether an exact payload of `count` records is well formed for n parameters.
bool validate_exact(std::span<const std::uint8_t> payload, std::size_t count, std::size_t n,
                    std::string* error);
// target[index] += sign * value for every record of a validated payload.
void apply_exact(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                 float sign);
// Appends every record's index and value (of a validated payload).
void exact_entries(std::span<const std::uint8_t> payload, std::size_t count,
                   std::vector<std::uint32_t>& indices, std::vector<float>& values);

}  // namespace gradshare::codec
