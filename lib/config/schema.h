// schema.h: the schema table of the experiment configuration, generated from the X-macro key
// lists of experiment_config.h. One KeyInfo per key: dotted path, value type, constraint, help,
// and a getter/setter into ExperimentConfig. Parsing, printing, `--keys` and the generated
// reference all walk this table.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::config {

enum class ValueType { kBool, kInt, kDouble, kString, kIntList, kLayerList, kFaultList };

// Any value a key can hold; the alternative always matches the key's ValueType.
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                           std::vector<LayerSpec>, std::vector<FaultInjection>>;

// The allowed values of a key: a range for numbers (and the elements of integer lists), a set
// of choices for strings, or anything.
struct Constraint {
  bool has_range = false;
  double min = 0.0;
  double max = 0.0;
  bool max_exclusive = false;  // [min, max) instead of [min, max]
  std::vector<std::string> choices;

  static Constraint range(double min, double max);
  static Constraint below(double min, double max);  // [min, max)
  static Constraint one_of(std::vector<std::string> choices);
};

struct KeyInfo {
  std::string section;
  std::string key;
  std::string path;  // "section.key"
  ValueType type;
  Constraint constraint;
  std::string help;
  Value (*get)(const ExperimentConfig&);
  void (*set)(ExperimentConfig&, Value);
};

// Every key, in the order of GS_CONFIG_SECTIONS and of each section's list.
const std::vector<KeyInfo>& schema();
// Section names in order.
const std::vector<std::string>& section_names();
// The key with this dotted path, or nullptr.
const KeyInfo* find_key(const std::string& path);
// A key whose value differs between two configs, both values as YAML renders them.
struct SettingDifference {
  std::string path;
  std::string before;
  std::string after;
};
// The keys whose values differ, in schema order (entry line numbers and source_path are
// ignored).
std::vector<SettingDifference> differences(const ExperimentConfig& before,
                                           const ExperimentConfig& after);
// True when both configs hold the same value for every key.
bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b);

}  // namespace gradshare::config
