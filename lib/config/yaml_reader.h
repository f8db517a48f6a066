// yaml_reader.h: YAML nodes -> typed config values, with one-line UserErrors that name where
// the bad value came from (a file position, or the command-line override).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "config/schema.h"

namespace gradshare::config {

// Where nodes come from: a file (positions become FILE:LINE:COL) or one override argument
// (positions inside it are meaningless to the user and left out).
struct Origin {
  std::string file;
  std::string override_arg;  // non-empty for an override

  // "FILE:LINE:COL" (1-based), "FILE" without a position, or "override 'ARG'".
  std::string at(const YAML::Mark& mark) const;
  // Throws core::UserError("<at(mark)>: <message>").
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;
};

// Converts `node` to the value of `key`, checking type and constraint.
Value read_value(const YAML::Node& node, const KeyInfo& key, const Origin& origin);

// Reads a whole document (a map of sections) into `config`. `where` records, per dotted path,
// the position of the value that set it (for cross-key messages).
void read_document(const YAML::Node& root, const Origin& origin, ExperimentConfig& config,
                   std::map<std::string, std::string>& where);

}  // namespace gradshare::config
