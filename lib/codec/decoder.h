// decoder.h: applying a received message to parameters, or adding it to an accumulator, in one
// fused pass over the payload (no dense temporary). Both verify the whole message first
// (header fields, checksum, payload structure) and leave the target untouched when anything
// is wrong, so a malformed message from the network can never corrupt a replica.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gradshare::codec {

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
