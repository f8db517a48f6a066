// value_format.cpp: text forms of config values.
#include "config/value_format.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "config/entry_schema.h"

namespace gradshare::config {
namespace {

// YAML double-quoted scalar: always safe, whatever the string holds.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string format_bound(double v, ValueType type) {
  if (type == ValueType::kDouble) return format_double(v);
  return std::to_string(static_cast<std::int64_t>(v));
}

template <class Entry>
std::string render_entry(const Entry& entry, const std::vector<EntryField<Entry>>& fields,
                         const std::string& entry_type) {
  std::string out = "{";
  for (const auto& field : fields) {
    if (!field_applies(field, entry_type)) continue;
    if (out.size() > 1) out += ", ";
    // Entry strings come from fixed choices, so they need no quotes.
    Value v = field.get(entry);
    out +=
        field.name + ": " +
        (field.type == ValueType::kString ? std::get<std::string>(v) : render_value(v, field.type));
  }
  return out + "}";
}

}  // namespace

std::string format_double(double v) {
  // to_chars without a precision writes the shortest text that reads back exactly.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

std::string render_layer(const LayerSpec& layer) {
  return render_entry(layer, layer_fields(), layer.type);
}

std::string render_fault(const FaultInjection& fault) {
  return render_entry(fault, fault_fields(), "");
}

// "[a, b, c]" with each item rendered by `render`.
template <typename T, typename Render>
std::string render_list(const std::vector<T>& list, Render render) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << render(list[i]);
  out << ']';
  return out.str();
}

std::string render_value(const Value& v, ValueType type) {
  switch (type) {
    case ValueType::kBool:
      return std::get<bool>(v) ? "true" : "false";
    case ValueType::kInt:
      return std::to_string(std::get<std::int64_t>(v));
    case ValueType::kDouble:
      return format_double(std::get<double>(v));
    case ValueType::kString:
      return quote(std::get<std::string>(v));
    case ValueType::kIntList:
      return render_list(std::get<std::vector<std::int64_t>>(v),
                         [](std::int64_t i) { return std::to_string(i); });
    case ValueType::kLayerList:
      return render_list(std::get<std::vector<LayerSpec>>(v), render_layer);
    case ValueType::kFaultList:
      return render_list(std::get<std::vector<FaultInjection>>(v), render_fault);
  }
  return {};
}

std::string type_name(ValueType type) {
  switch (type) {
    case ValueType::kBool:
      return "bool";
    case ValueType::kInt:
      return "integer";
    case ValueType::kDouble:
      return "number";
    case ValueType::kString:
      return "string";
    case ValueType::kIntList:
      return "list of integers";
    case ValueType::kLayerList:
      return "list of layers";
    case ValueType::kFaultList:
      return "list of faults";
  }
  return "?";
}

std::string describe_range(const Constraint& c, ValueType type) {
  return "[" + format_bound(c.min, type) + ", " + format_bound(c.max, type) +
         (c.max_exclusive ? ")" : "]");
}

std::string describe_constraint(const Constraint& c, ValueType type) {
  if (c.has_range) return describe_range(c, type);
  if (!c.choices.empty()) {
    std::string out = "one of ";
    for (std::size_t i = 0; i < c.choices.size(); ++i) out += (i ? ", " : "") + c.choices[i];
    return out;
  }
  return "any";
}

}  // namespace gradshare::config
