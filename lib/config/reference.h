// reference.h: human-readable views of the schema: `gradshare config --keys` and the generated
// docs/config-reference.md (`gradshare config --reference`).
#pragma once

#include <string>

namespace gradshare::config {

// One line per key: path, type, default, allowed values, help; then the layer and fault entry
// keys as model.layers[].KEY and fault_tolerance.inject[].KEY.
std::string keys_listing();

// The content of docs/config-reference.md.
std::string reference_markdown();

}  // namespace gradshare::config
