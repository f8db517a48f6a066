// value_format.h: text forms of config values: YAML flow text (re-loadable), type names and
// constraint descriptions for messages, `--keys` and the reference.
#pragma once

#include <string>

#include "config/schema.h"

namespace gradshare::config {

// Shortest decimal text that reads back as exactly `v` ("0.001", "1e-08", "100").
std::string format_double(double v);
// `v` as YAML text that parses back to the same value; lists in flow syntax.
std::string render_value(const Value& v, ValueType type);
// One layer / fault entry as a YAML flow map, only the keys that apply to it.
std::string render_layer(const LayerSpec& layer);
std::string render_fault(const FaultInjection& fault);
// "integer", "number", "list of integers", ...
std::string type_name(ValueType type);
// "[0, 100]", "one of sgd, momentum", or "any"; bounds of integer types printed as integers.
std::string describe_constraint(const Constraint& c, ValueType type);
// "[0, 100]" / "[0, 1)" alone; bounds as above.
std::string describe_range(const Constraint& c, ValueType type);

}  // namespace gradshare::config
