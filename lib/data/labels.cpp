// labels.cpp: label range checks.
#include "data/labels.h"

#include <algorithm>

#include "core/errors.h"

namespace gradshare::data {

void check_label_range(std::span<const std::int32_t> labels, const std::string& path,
                       std::int32_t num_classes) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= 0 && labels[i] < num_classes) continue;
    const std::string allowed =
        num_classes == kMaxClasses
            ? "class ids must lie in 0.." + std::to_string(kMaxClasses - 1)
            : "the training set's classes are 0.." + std::to_string(num_classes - 1);
    throw core::UserError(path + ": label " + std::to_string(labels[i]) + " of sample " +
                          std::to_string(i) + " is out of range (" + allowed + ")");
  }
}

std::int32_t count_classes(std::span<const std::int32_t> labels) {
  if (labels.empty()) return 0;
  return *std::max_element(labels.begin(), labels.end()) + 1;
}

}  // namespace gradshare::data
