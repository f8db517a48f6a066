// resume_config_check.h: a resumed run whose config differs from the config of the run it
// resumes. The two are compared key by key (config::differences):
//   - model.*: the checkpoint's parameters would not fit this model: UserError naming the keys
//     (before anything is written);
//   - keys one changes to resume (training.epochs, checkpoint.*, logging.*, run.dir, run.name,
//     run.output_dir, fault_tolerance.*): accepted silently;
//   - every other key (a learning rate, run.seed, the strategy, the data subset, ...): accepted
//     and returned as one line each, "key: before -> now", for the log.
#pragma once

#include <string>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::cli {

// `previous_yaml` is the resumed run's resolved config, `source` names where it came from (a
// checkpoint file, a run directory's config.yaml). A previous config this version cannot read
// gives one line saying so instead of a comparison.
std::vector<std::string> check_resume_config(const config::ExperimentConfig& now,
                                             const std::string& previous_yaml,
                                             const std::string& source);

// The config a run in `run_path` resumes from with checkpoint.resume auto: the directory's
// config.yaml when the directory holds a checkpoint, else "" (nothing to resume).
std::string resumed_config_text(const std::string& run_path);

}  // namespace gradshare::cli
