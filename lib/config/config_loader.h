// config_loader.h: loading experiment configs: YAML file or text + command-line overrides ->
// validated ExperimentConfig with every default filled in, and back to YAML.
// Every mistake is a one-line core::UserError naming the file, line, column and key.
// The one header to include for the config API: it also brings keys_listing(),
// reference_markdown() (reference.h) and suggest_closest() (suggest.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/experiment_config.h"
#include "config/reference.h"
#include "config/suggest.h"

namespace gradshare::config {

// Reads FILE, applies overrides ("key.path=value", value in YAML flow syntax, e.g.
// model.input_shape=[1,28,28] or model.layers=[{type: dense, units: 10}]), validates, fills
// defaults. source_path of the result is `path`.
ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides = {});

// Same as load_experiment, from text; `source_name` stands for the file in messages.
ExperimentConfig parse_experiment_text(const std::string& yaml_text, const std::string& source_name,
                                       const std::vector<std::string>& overrides = {});

// Every key at its default.
ExperimentConfig default_experiment();

// The fully resolved config, every key, in section order; parse_experiment_text reads it back.
std::string to_yaml(const ExperimentConfig& config);

// "training.epochs=3" -> {"training.epochs", "3"}; throws UserError
// "override 'ARG': expected key.path=value" when ARG has no '=' or no dotted key before it.
std::pair<std::string, std::string> split_override(const std::string& arg);

}  // namespace gradshare::config
