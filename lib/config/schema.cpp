// schema.cpp: expands the key lists of experiment_config.h into the schema table.
#include "config/schema.h"

#include <utility>

#include "config/value_format.h"

// The constraint macros the key lists use; they only mean something here.
#define GS_ANY \
  ::gradshare::config::Constraint {}
#define GS_RANGE(min, max) ::gradshare::config::Constraint::range(min, max)
#define GS_CHOICES(...) ::gradshare::config::Constraint::one_of({__VA_ARGS__})

namespace gradshare::config {
namespace {

// The ValueType of each C++ member type; a key of any other type does not compile.
template <class T>
struct TypeOf;
#define GS_TYPE_OF(cpp_type, value_type)           \
  template <>                                      \
  struct TypeOf<cpp_type> {                        \
    static constexpr ValueType kType = value_type; \
  };
GS_TYPE_OF(bool, ValueType::kBool)
GS_TYPE_OF(std::int64_t, ValueType::kInt)
GS_TYPE_OF(double, ValueType::kDouble)
GS_TYPE_OF(std::string, ValueType::kString)
GS_TYPE_OF(std::vector<std::int64_t>, ValueType::kIntList)
GS_TYPE_OF(std::vector<LayerSpec>, ValueType::kLayerList)
GS_TYPE_OF(std::vector<FaultInjection>, ValueType::kFaultList)
#undef GS_TYPE_OF

// One KeyInfo per X(...) line of the key lists.
#define GS_SCHEMA_ENTRY(sec, name, cpp_type, default_value, constraint, help_text) \
  KeyInfo{#sec,                                                                    \
          #name,                                                                   \
          #sec "." #name,                                                          \
          TypeOf<cpp_type>::kType,                                                 \
          constraint,                                                              \
          help_text,                                                               \
          [](const ExperimentConfig& c) { return Value{c.sec.name}; },             \
          [](ExperimentConfig& c, Value v) { c.sec.name = std::get<cpp_type>(std::move(v)); }},
#define GS_SCHEMA_SECTION(sec, Name, KEYS) KEYS(GS_SCHEMA_ENTRY)

std::vector<KeyInfo> build_schema() { return {GS_CONFIG_SECTIONS(GS_SCHEMA_SECTION)}; }

#undef GS_SCHEMA_SECTION
#undef GS_SCHEMA_ENTRY

}  // namespace

Constraint Constraint::range(double min, double max) {
  Constraint c;
  c.has_range = true;
  c.min = min;
  c.max = max;
  return c;
}

Constraint Constraint::below(double min, double max) {
  Constraint c = range(min, max);
  c.max_exclusive = true;
  return c;
}

Constraint Constraint::one_of(std::vector<std::string> choices) {
  Constraint c;
  c.choices = std::move(choices);
  return c;
}

const std::vector<KeyInfo>& schema() {
  static const std::vector<KeyInfo> table = build_schema();
  return table;
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const KeyInfo& k : schema()) {
      if (out.empty() || out.back() != k.section) out.push_back(k.section);
    }
    return out;
  }();
  return names;
}

const KeyInfo* find_key(const std::string& path) {
  for (const KeyInfo& k : schema()) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

std::vector<SettingDifference> differences(const ExperimentConfig& before,
                                           const ExperimentConfig& after) {
  // The YAML rendering is exact (doubles round-trip) and leaves out line numbers.
  std::vector<SettingDifference> found;
  for (const KeyInfo& k : schema()) {
    auto old_value = render_value(k.get(before), k.type);
    auto new_value = render_value(k.get(after), k.type);
    if (old_value != new_value) found.push_back({k.path, std::move(old_value), std::move(new_value)});
  }
  return found;
}

bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b) {
  return differences(a, b).empty();
}

}  // namespace gradshare::config
