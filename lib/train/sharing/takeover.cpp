// sharing/takeover.cpp: the new master's parameters from an aggregating tree's survivors
// (sharing/takeover.h).
#include "train/sharing/takeover.h"

#include <algorithm>

#include "core/errors.h"

namespace gradshare::train {

std::vector<float> parameters_from_children(const std::vector<RelayUpward>& children,
                                            std::size_t parameter_count) {
  if (children.empty())
    throw core::RuntimeError(
        "the master was lost and none of its children on the aggregating tree survived it: "
        "what they had sent it is lost; the job ends, and the same command resumes it from its "
        "newest checkpoint");
  std::vector<float> parameters = children.front().base;
  for (const auto& child : children) {
    if (child.base.size() != parameter_count || child.upward.size() != parameter_count)
      throw core::RuntimeError("a child of the lost master sent a base of " +
                               std::to_string(child.base.size()) + " and sums of " +
                               std::to_string(child.upward.size()) + " parameters, not " +
                               std::to_string(parameter_count));
    if (!std::equal(child.base.begin(), child.base.end(), parameters.begin()))
      throw core::RuntimeError(
          "the lost master's children started their relays from different parameters: the "
          "job ends, and the same command resumes it from its newest checkpoint");
  }
  for (const auto& child : children)
    for (std::size_t i = 0; i < parameter_count; ++i) parameters[i] -= child.upward[i];
  return parameters;
}

std::uint64_t relay_base_fingerprint(std::span<const float> base) {
  std::uint64_t hash = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(base.data());
  for (std::size_t i = 0; i < base.size_bytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

}  // namespace gradshare::train
