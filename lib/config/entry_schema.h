// entry_schema.h: the small key tables of list entries that are maps: the layers of
// model.layers (LayerSpec) and the faults of fault_tolerance.inject (FaultInjection).
#pragma once

#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "config/schema.h"

namespace gradshare::config {

// One key of an entry map. `applies_to` and `required_for` name values of the entry's `type`
// (layers only); empty `applies_to` means every type, "*" in `required_for` every type.
template <class Entry>
struct EntryField {
  std::string name;
  ValueType type;  // kInt, kDouble or kString
  Constraint constraint;
  std::vector<std::string> applies_to;
  std::vector<std::string> required_for;
  std::string help;
  Value (*get)(const Entry&);
  void (*set)(Entry&, Value);
};

const std::vector<EntryField<LayerSpec>>& layer_fields();
const std::vector<EntryField<FaultInjection>>& fault_fields();

// True when `field` may appear in an entry whose type is `type`.
template <class Entry>
bool field_applies(const EntryField<Entry>& field, const std::string& type) {
  if (field.applies_to.empty()) return true;
  for (const std::string& t : field.applies_to) {
    if (t == type) return true;
  }
  return false;
}

}  // namespace gradshare::config
