// config_loader.cpp: file reading, document parsing, overrides and YAML output.
#include "config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/cross_checks.h"
#include "config/schema.h"
#include "config/suggest.h"
#include "config/value_format.h"
#include "config/yaml_reader.h"
#include "core/errors.h"

namespace gradshare::config {
namespace {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw core::UserError(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw core::UserError(path + ": no such file");
    if (err == EACCES) throw core::UserError(path + ": cannot read (permission denied)");
    throw core::UserError(path + ": cannot read (" + std::strerror(err) + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw core::UserError(path + ": cannot read (" + std::strerror(errno) + ")");
  return text.str();
}

// Parses YAML text, turning yaml-cpp's exceptions into positioned UserErrors.
std::vector<YAML::Node> load_all(const std::string& text, const Origin& origin) {
  try {
    return YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    origin.fail(e.mark, "YAML syntax error: " + e.msg);
  }
}

bool valid_key_path(const std::string& key) {
  if (key.find('.') == std::string::npos || key.front() == '.' || key.back() == '.') return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char ch = key[i];
    const bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
    if (!word && !(ch == '.' && key[i - 1] != '.')) return false;
  }
  return true;
}

void apply_override(const std::string& arg, ExperimentConfig& config,
                    std::map<std::string, std::string>& where) {
  const auto [path, text] = split_override(arg);
  const KeyInfo* key = find_key(path);
  if (!key) {
    std::vector<std::string> paths;
    for (const KeyInfo& k : schema()) paths.push_back(k.path);
    throw core::UserError("override '" + arg + "': unknown key '" + path + "'" +
                          did_you_mean(path, paths));
  }
  const Origin origin{"", arg};
  std::vector<YAML::Node> docs = load_all(text, origin);
  const YAML::Node value = docs.empty() ? YAML::Node() : docs.front();
  key->set(config, read_value(value, *key, origin));
  where[path] = origin.at(YAML::Mark::null_mark());
}

}  // namespace

std::pair<std::string, std::string> split_override(const std::string& arg) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || !valid_key_path(arg.substr(0, eq))) {
    throw core::UserError("override '" + arg + "': expected key.path=value");
  }
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

ExperimentConfig parse_experiment_text(const std::string& yaml_text, const std::string& source_name,
                                       const std::vector<std::string>& overrides) {
  // The file is read before the overrides are applied, so overrides win.
  const Origin origin{source_name, ""};
  ExperimentConfig config;
  config.source_path = source_name;
  std::map<std::string, std::string> where;
  const std::vector<YAML::Node> docs = load_all(yaml_text, origin);
  if (docs.empty() || (docs.size() == 1 && docs.front().IsNull())) {
    throw core::UserError(source_name + ": empty config (expected a YAML map of sections)");
  }
  if (docs.size() > 1) {
    origin.fail(docs[1].Mark(), "expected one YAML document, found " + std::to_string(docs.size()));
  }
  read_document(docs.front(), origin, config, where);
  for (const std::string& arg : overrides) apply_override(arg, config, where);
  cross_check(config, where, source_name);
  return config;
}

ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  return parse_experiment_text(read_file(path), path, overrides);
}

ExperimentConfig default_experiment() { return ExperimentConfig{}; }

std::string to_yaml(const ExperimentConfig& config) {
  std::string out;
  std::string section;
  for (const KeyInfo& k : schema()) {
    if (k.section != section) {
      section = k.section;
      out += (out.empty() ? "" : "\n") + section + ":\n";
    }
    const Value v = k.get(config);
    out += "  " + k.key + ":";
    if (k.type == ValueType::kLayerList && !std::get<std::vector<LayerSpec>>(v).empty()) {
      for (const LayerSpec& layer : std::get<std::vector<LayerSpec>>(v)) {
        out += "\n    - " + render_layer(layer);
      }
      out += "\n";
    } else if (k.type == ValueType::kFaultList &&
               !std::get<std::vector<FaultInjection>>(v).empty()) {
      for (const FaultInjection& fault : std::get<std::vector<FaultInjection>>(v)) {
        out += "\n    - " + render_fault(fault);
      }
      out += "\n";
    } else {
      out += " " + render_value(v, k.type) + "\n";
    }
  }
  return out;
}

}  // namespace gradshare::config
