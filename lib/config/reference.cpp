// reference.cpp: `--keys` listing and the Markdown config reference, both from the schema.
#include "config/reference.h"

#include <algorithm>
#include <array>
#include <vector>

#include "config/entry_schema.h"
#include "config/schema.h"
#include "config/value_format.h"

namespace gradshare::config {
namespace {

// One described key, whether a section key or an entry key.
struct Row {
  std::string path;
  std::string type;
  std::string default_text;
  std::string allowed;
  std::string applies;  // entry keys only
  std::string help;
};

std::vector<Row> section_rows() {
  const ExperimentConfig defaults;
  std::vector<Row> rows;
  for (const KeyInfo& k : schema()) {
    rows.push_back({k.path, type_name(k.type), render_value(k.get(defaults), k.type),
                    describe_constraint(k.constraint, k.type), "", k.help});
  }
  return rows;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

template <class Entry>
std::vector<Row> entry_rows(const std::string& prefix,
                            const std::vector<EntryField<Entry>>& fields) {
  const Entry defaults;
  std::vector<Row> rows;
  for (const auto& f : fields) {
    std::string default_text = render_value(f.get(defaults), f.type);
    if (f.type == ValueType::kString) default_text = std::get<std::string>(f.get(defaults));
    if (!f.required_for.empty()) {
      default_text =
          f.required_for.front() == "*" ? "required" : "required for " + join(f.required_for);
    }
    rows.push_back({prefix + f.name, type_name(f.type), default_text,
                    describe_constraint(f.constraint, f.type),
                    f.applies_to.empty() ? "all" : join(f.applies_to), f.help});
  }
  return rows;
}

std::string pad(const std::string& s, std::size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

std::string cell(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

std::string markdown_table(const std::vector<Row>& rows, std::size_t name_offset,
                           bool with_applies) {
  std::string out = with_applies ? "| key | type | default | allowed | applies to | description |\n"
                                   "| --- | --- | --- | --- | --- | --- |\n"
                                 : "| key | type | default | allowed | description |\n"
                                   "| --- | --- | --- | --- | --- |\n";
  for (const Row& r : rows) {
    // "required" is prose, a default value is code.
    const std::string default_cell = r.default_text.rfind("required", 0) == 0
                                         ? r.default_text
                                         : "`" + cell(r.default_text) + "`";
    out += "| `" + r.path.substr(name_offset) + "` | " + r.type + " | " + default_cell + " | " +
           cell(r.allowed) + " | " + (with_applies ? cell(r.applies) + " | " : "") + cell(r.help) +
           " |\n";
  }
  return out;
}

}  // namespace

std::string keys_listing() {
  std::vector<Row> rows = section_rows();
  for (Row& r : entry_rows("model.layers[].", layer_fields())) rows.push_back(std::move(r));
  for (Row& r : entry_rows("fault_tolerance.inject[].", fault_fields())) {
    rows.push_back(std::move(r));
  }
  std::array<std::size_t, 4> width{};
  for (const Row& r : rows) {
    width[0] = std::max(width[0], r.path.size());
    width[1] = std::max(width[1], r.type.size());
    width[2] = std::max(width[2], r.default_text.size());
    width[3] = std::max(width[3], r.allowed.size());
  }
  std::string out;
  for (const Row& r : rows) {
    std::string help = r.help;
    if (!r.applies.empty() && r.applies != "all") help = "(" + r.applies + ") " + help;
    out += pad(r.path, width[0]) + "  " + pad(r.type, width[1]) + "  " +
           pad(r.default_text, width[2]) + "  " + pad(r.allowed, width[3]) + "  " + help + "\n";
  }
  return out;
}

std::string reference_markdown() {
  std::string out =
      "<!-- Generated from lib/config/experiment_config.h by `gradshare config --reference`;\n"
      "     do not edit by hand: regenerate with\n"
      "     build/gradshare config --reference > docs/config-reference.md -->\n"
      "# Configuration reference\n\n"
      "An experiment is a YAML file whose top level is a map of the sections below. Every "
      "section and every key may be left out: it then takes its default. Unknown sections and "
      "keys, values of the wrong type, values out of range and duplicate keys are errors that "
      "name the file, line and column.\n\n"
      "Any key can be overridden on the command line as `section.key=value`, the value in YAML "
      "flow syntax, for example:\n\n"
      "```\n"
      "gradshare train configs/fashion-mnist-mlp.yaml training.epochs=3 "
      "model.input_shape=[784] \\\n"
      "    'model.layers=[{type: dense, units: 128, activation: relu}]'\n"
      "```\n\n"
      "`gradshare config FILE [overrides]` prints the fully resolved configuration; "
      "`gradshare config --keys` lists every key on one line each.\n\n"
      "Numbers: `integer` keys take YAML integers; `number` keys take integers or decimals "
      "(`1e-3`). Ranges are inclusive unless written with `)`.\n";
  const std::vector<Row> rows = section_rows();
  const std::vector<KeyInfo>& keys = schema();
  for (std::size_t begin = 0; begin < keys.size();) {
    std::size_t end = begin;
    while (end < keys.size() && keys[end].section == keys[begin].section) ++end;
    const std::vector<Row> section(rows.begin() + begin, rows.begin() + end);
    out += "\n## " + keys[begin].section + "\n\n" +
           markdown_table(section, keys[begin].section.size() + 1, false);
    begin = end;
  }
  out +=
      "\n## model.layers entries\n\n"
      "Each entry of `model.layers` is a map, for example `{type: conv2d, filters: 32, "
      "kernel: 3, activation: relu}`. A key that does not apply to the entry's type is an "
      "error.\n\n" +
      markdown_table(entry_rows("", layer_fields()), 0, true);
  out +=
      "\n## fault_tolerance.inject entries\n\n"
      "Each entry of `fault_tolerance.inject` is a map such as `{rank: 1, at_step: 100, "
      "kind: sigkill}`, for testing recovery.\n\n" +
      markdown_table(entry_rows("", fault_fields()), 0, false);
  return out;
}

}  // namespace gradshare::config
