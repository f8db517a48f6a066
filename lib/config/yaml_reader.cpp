// yaml_reader.cpp: YAML nodes -> typed config values, with positioned one-line errors.
#include "config/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "config/entry_schema.h"
#include "config/suggest.h"
#include "config/value_format.h"
#include "core/errors.h"

namespace gradshare::config {
namespace {

// A null node's own mark points past it; use its key's instead.
YAML::Mark mark_of(const YAML::Node& node, const YAML::Mark& fallback) {
  return node.IsNull() || node.Mark().is_null() ? fallback : node.Mark();
}

// What the user wrote, for "got ..." in messages.
std::string describe_got(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return "nothing";
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A numeric text without the leading '+' that from_chars does not take.
std::string_view number_text(const std::string& text) {
  std::string_view t = text;
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  return t;
}

// Everything one value check needs: the node, its position, and its dotted name.
struct Slot {
  const YAML::Node& node;
  YAML::Mark mark;
  std::string name;  // "training.epochs", "model.layers[0].units"
  const Origin& origin;

  [[noreturn]] void fail(const std::string& message) const {
    origin.fail(mark, quoted(name) + " " + message);
  }
};

void check_range(const Slot& s, double v, const Constraint& c, ValueType type) {
  if (!c.has_range) return;
  bool above = c.max_exclusive ? v >= c.max : v > c.max;
  if (v < c.min || above) {
    s.fail("must be in " + describe_range(c, type) + ", got " + s.node.Scalar());
  }
}

Value read_scalar(const Slot& s, ValueType type, const Constraint& c) {
  const YAML::Node& n = s.node;
  if (type == ValueType::kString) {
    if (!n.IsNull() && !n.IsScalar()) s.fail("must be a string, got " + describe_got(n));
    std::string v = n.IsNull() ? "" : n.Scalar();
    if (!c.choices.empty()) {
      bool ok = false;
      for (const std::string& choice : c.choices) ok = ok || choice == v;
      if (!ok) s.fail("must be " + describe_constraint(c, type) + ", got " + quoted(v));
    }
    return v;
  }
  if (type == ValueType::kBool) {
    static const std::set<std::string> kTrue = {"true", "True", "TRUE"};
    static const std::set<std::string> kFalse = {"false", "False", "FALSE"};
    if (n.IsScalar() && kTrue.count(n.Scalar())) return true;
    if (n.IsScalar() && kFalse.count(n.Scalar())) return false;
    s.fail("must be true or false, got " + describe_got(n));
  }
  if (type == ValueType::kInt) {
    if (!n.IsScalar()) s.fail("must be an integer, got " + describe_got(n));
    std::string_view t = number_text(n.Scalar());
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (end != t.data() + t.size() || t.empty() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      s.fail("must be an integer, got " + describe_got(n));
    }
    if (ec == std::errc::result_out_of_range) {
      s.fail("must be in " +
             describe_range(c.has_range ? c : Constraint::range(-9.2e18, 9.2e18), type) + ", got " +
             n.Scalar());
    }
    check_range(s, static_cast<double>(v), c, type);
    return v;
  }
  // kDouble: integers and floats.
  if (!n.IsScalar()) s.fail("must be a number, got " + describe_got(n));
  std::string_view t = number_text(n.Scalar());
  double v = 0.0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (end != t.data() + t.size() || t.empty() || ec != std::errc() || !std::isfinite(v)) {
    s.fail("must be a number, got " + describe_got(n));
  }
  check_range(s, v, c, type);
  return v;
}

std::vector<std::int64_t> read_int_list(const Slot& s, const Constraint& c) {
  if (!s.node.IsSequence()) s.fail("must be a list of integers, got " + describe_got(s.node));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < s.node.size(); ++i) {
    const YAML::Node element = s.node[i];
    Slot es{element, mark_of(element, s.mark), s.name + "[" + std::to_string(i) + "]", s.origin};
    out.push_back(std::get<std::int64_t>(read_scalar(es, ValueType::kInt, c)));
  }
  return out;
}

// The keys of one entry map, checked for duplicates and unknown names.
struct EntryKeys {
  std::vector<std::pair<std::string, std::pair<YAML::Mark, YAML::Node>>> items;

  const std::pair<YAML::Mark, YAML::Node>* find(const std::string& name) const {
    for (const auto& item : items) {
      if (item.first == name) return &item.second;
    }
    return nullptr;
  }
};

template <class Entry>
EntryKeys collect_entry_keys(const Slot& s, const std::vector<EntryField<Entry>>& fields,
                             const std::string& example) {
  if (!s.node.IsMap()) s.fail("must be a map like " + example + ", got " + describe_got(s.node));
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.name);
  EntryKeys keys;
  for (auto it = s.node.begin(); it != s.node.end(); ++it) {
    const YAML::Mark key_mark = it->first.Mark();
    const std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
    if (keys.find(name)) {
      s.origin.fail(key_mark, "duplicate key " + quoted(name) + " in " + quoted(s.name));
    }
    bool known = false;
    for (const std::string& n : names) known = known || n == name;
    if (!known) {
      s.origin.fail(key_mark, "unknown key " + quoted(name) + " in " + quoted(s.name) +
                                  did_you_mean(name, names));
    }
    keys.items.push_back({name, {key_mark, it->second}});
  }
  return keys;
}

// Reads every given field of one entry whose type (for layers) is `entry_type`.
template <class Entry>
void read_entry_fields(const Slot& s, const EntryKeys& keys,
                       const std::vector<EntryField<Entry>>& fields, const std::string& entry_type,
                       Entry& entry) {
  for (const auto& field : fields) {
    const auto* given = keys.find(field.name);
    const auto& req = field.required_for;
    const bool required = std::find(req.begin(), req.end(), "*") != req.end() ||
                          std::find(req.begin(), req.end(), entry_type) != req.end();
    if (!given) {
      if (required) {
        s.fail("needs " + quoted(field.name) +
               (entry_type.empty() ? "" : " for type " + entry_type));
      }
      continue;
    }
    Slot fs{given->second, mark_of(given->second, given->first), s.name + "." + field.name,
            s.origin};
    if (!field_applies(field, entry_type)) {
      s.origin.fail(given->first,
                    quoted(fs.name) + " does not apply to a " + entry_type + " layer");
    }
    field.set(entry, read_scalar(fs, field.type, field.constraint));
  }
}

int entry_line(const Slot& s) {
  return s.origin.override_arg.empty() && !s.mark.is_null() ? s.mark.line + 1 : 0;
}

LayerSpec read_layer(const Slot& s) {
  EntryKeys keys = collect_entry_keys(s, layer_fields(), "{type: dense, units: 10}");
  LayerSpec layer;
  if (!keys.find("type")) {
    s.fail("needs 'type' (" +
           describe_constraint(layer_fields().front().constraint, ValueType::kString) + ")");
  }
  // The type decides which other keys apply, so it is read first (it is the first field).
  const auto* type = keys.find("type");
  Slot ts{type->second, mark_of(type->second, type->first), s.name + ".type", s.origin};
  layer.type =
      std::get<std::string>(read_scalar(ts, ValueType::kString, layer_fields().front().constraint));
  // Pooling windows do not overlap unless asked to, as in other frameworks.
  if (layer.type == "maxpool2d") layer.stride = 0;
  read_entry_fields(s, keys, layer_fields(), layer.type, layer);
  if (layer.type == "conv2d" && layer.stride < 1) {
    const auto* stride = keys.find("stride");
    s.origin.fail(stride->first, quoted(s.name + ".stride") + " must be >= 1 for conv2d, got " +
                                     std::to_string(layer.stride));
  }
  layer.line = entry_line(s);
  return layer;
}

FaultInjection read_fault(const Slot& s) {
  EntryKeys keys = collect_entry_keys(s, fault_fields(), "{rank: 1, at_step: 100, kind: sigkill}");
  FaultInjection fault;
  read_entry_fields(s, keys, fault_fields(), "", fault);
  // Before training there are no heartbeats to find a hung rank, or one that left without
  // Open MPI reporting it, by: only a killed process is lost at start-up.
  if (fault.at_startup != "none" && fault.kind != "sigkill")
    s.fail("kind " + fault.kind + " cannot be injected at start-up (at_startup " +
           fault.at_startup + "): use sigkill");
  if (fault.rank == 0 && fault.at_startup == "none")
    s.fail("rank 0 is the master, which takes no training steps: give it at_startup");
  fault.line = entry_line(s);
  return fault;
}

template <class Entry>
std::vector<Entry> read_entries(const Slot& s, Entry (*read_one)(const Slot&),
                                const std::string& what) {
  // A missing or null value is an empty list.
  if (s.node.IsNull()) return {};
  if (!s.node.IsSequence()) s.fail("must be a list of " + what + ", got " + describe_got(s.node));
  std::vector<Entry> out;
  for (std::size_t i = 0; i < s.node.size(); ++i) {
    const YAML::Node element = s.node[i];
    Slot es{element, mark_of(element, s.mark), s.name + "[" + std::to_string(i) + "]", s.origin};
    out.push_back(read_one(es));
  }
  return out;
}

// Pairs of a map in document order, failing on a repeated key (yaml-cpp keeps duplicates).
std::vector<std::pair<std::string, YAML::const_iterator>> unique_pairs(const YAML::Node& map,
                                                                       const Origin& origin,
                                                                       const std::string& kind,
                                                                       const std::string& in) {
  std::vector<std::pair<std::string, YAML::const_iterator>> out;
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) {
      origin.fail(it->first.Mark(),
                  kind + " names must be plain words, got " + describe_got(it->first));
    }
    const std::string name = it->first.Scalar();
    if (!seen.insert(name).second) {
      origin.fail(it->first.Mark(), "duplicate " + kind + " " + quoted(name) + in);
    }
    out.emplace_back(name, it);
  }
  return out;
}

// " (did you mean ...?)" for an unknown key of `section`: a close key of that section, else
// the same key name in another section.
std::string suggest_key(const std::string& section, const std::string& name) {
  std::vector<std::string> same_section;
  for (const KeyInfo& k : schema()) {
    if (k.section == section) same_section.push_back(k.key);
  }
  std::string hint = did_you_mean(name, same_section);
  if (!hint.empty()) return hint;
  for (const KeyInfo& k : schema()) {
    if (k.key == name) return " (did you mean '" + k.path + "'?)";
  }
  return "";
}

Value read_slot(const Slot& s, const KeyInfo& key) {
  switch (key.type) {
    case ValueType::kIntList:
      return read_int_list(s, key.constraint);
    case ValueType::kLayerList:
      return read_entries(s, &read_layer, "layers like [{type: dense, units: 10}]");
    case ValueType::kFaultList:
      return read_entries(s, &read_fault, "faults like [{rank: 1, at_step: 100, kind: sigkill}]");
    default:
      return read_scalar(s, key.type, key.constraint);
  }
}

}  // namespace

std::string Origin::at(const YAML::Mark& mark) const {
  if (!override_arg.empty()) return "override '" + override_arg + "'";
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void Origin::fail(const YAML::Mark& mark, const std::string& message) const {
  throw core::UserError(at(mark) + ": " + message);
}

Value read_value(const YAML::Node& node, const KeyInfo& key, const Origin& origin) {
  return read_slot(Slot{node, node.Mark(), key.path, origin}, key);
}

void read_document(const YAML::Node& root, const Origin& origin, ExperimentConfig& config,
                   std::map<std::string, std::string>& where) {
  if (!root.IsMap()) {
    origin.fail(root.Mark(),
                "expected a YAML map of sections (run:, data:, model:, ...) at the "
                "top level, got " +
                    describe_got(root));
  }
  for (const auto& [section, sit] : unique_pairs(root, origin, "section", "")) {
    const YAML::Mark section_mark = sit->first.Mark();
    const auto& names = section_names();
    if (std::find(names.begin(), names.end(), section) == names.end()) {
      origin.fail(section_mark,
                  "unknown section " + quoted(section) + did_you_mean(section, names));
    }
    const YAML::Node body = sit->second;
    if (body.IsNull()) continue;  // "training:" with nothing under it
    if (!body.IsMap()) {
      origin.fail(
          mark_of(body, section_mark),
          "section " + quoted(section) + " must be a map of keys, got " + describe_got(body));
    }
    for (const auto& [name, kit] : unique_pairs(body, origin, "key", " in " + quoted(section))) {
      const KeyInfo* key = find_key(section + "." + name);
      if (!key) {
        origin.fail(kit->first.Mark(), "unknown key " + quoted(name) + " in " + quoted(section) +
                                           suggest_key(section, name));
      }
      const YAML::Node value = kit->second;
      const YAML::Mark value_mark = mark_of(value, kit->first.Mark());
      key->set(config, read_slot(Slot{value, value_mark, key->path, origin}, *key));
      where[key->path] = origin.at(value_mark);
    }
  }
}

}  // namespace gradshare::config
