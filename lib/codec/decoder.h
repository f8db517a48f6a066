// decoder.h: applying a received message to parameters, or adding it to an accumulator, in one
// fused pass over the payload (no dense temporary). Both verify the whole message first
// (header fields, checksum, payload structure) and leave the target untouched when anything
// is wrong, so a malformed message from the network can never corrupt a replica.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codec/message.h"

namespace gradshare::codec {

// A message whose header parse_message has checked (every field, the length, the checksum
// over header and payload): parsed once, it is applied without checking those again.
struct ParsedMessage {
  MessageHeader header;
  std::span<const std::uint8_t> bytes;
};

// parse_header into a view of `bytes`; false with *error (if not null) when malformed.
bool parse_message(std::span<const std::uint8_t> bytes, std::size_t expected_parameter_count,
                   ParsedMessage& out, std::string* error);

// apply_message for a parsed message: checks the payload's structure only, then applies it;
// leaves `parameters` untouched when the payload is malformed.
bool apply_parsed(const ParsedMessage& message, std::span<float> parameters, std::string* error);
// accumulate_message for a parsed message (accumulator[i] += value_i).
bool accumulate_parsed(const ParsedMessage& message, std::span<float> accumulator,
                       std::string* error);

// Appends the 0-based index of every entry of a parsed message, ascending, and the value
// accumulate_parsed adds there; false (with *error) on a malformed payload. One decode where
// a caller that adds a message to several accumulators would otherwise decode it for each.
bool entry_values(const ParsedMessage& message, std::vector<std::uint32_t>& indices,
                  std::vector<float>& values, std::string* error);

// parameters[i] -= value_i for every entry (the project's sign convention: params -= update).
// Returns false with *error (if not null) on a malformed message. The parameter count the
// message must carry is parameters.size().
bool apply_message(std::span<const std::uint8_t> message, std::span<float> parameters,
                   std::string* error);

// accumulator[i] += value_i for every entry, so the sum of a worker's decoded messages plus
// its final residual equals the sum of its updates.
bool accumulate_message(std::span<const std::uint8_t> message, std::span<float> accumulator,
                        std::string* error);

}  // namespace gradshare::codec
