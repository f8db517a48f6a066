// labels.h: checks of class labels shared by the readers and the loader.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gradshare::data {

// Largest number of classes gradshare accepts (the range of model.num_classes).
inline constexpr std::int32_t kMaxClasses = 1000000;

// Throws a UserError naming `path` at the first label outside [0, num_classes).
void check_label_range(std::span<const std::int32_t> labels, const std::string& path,
                       std::int32_t num_classes);

// max(labels) + 1, or 0 for no labels.
std::int32_t count_classes(std::span<const std::int32_t> labels);

}  // namespace gradshare::data
