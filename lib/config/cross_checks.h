// cross_checks.h: semantic checks between keys, run after the file and the overrides are read.
#pragma once

#include <map>
#include <string>

#include "config/experiment_config.h"

namespace gradshare::config {

// Throws core::UserError naming the offending key and where it was set. `where` maps dotted
// paths to the position that set them ("FILE:LINE:COL" or "override 'ARG'"); keys left at their
// default are reported at `source`.
void cross_check(const ExperimentConfig& config, const std::map<std::string, std::string>& where,
                 const std::string& source);

}  // namespace gradshare::config
