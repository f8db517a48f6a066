#include "cli/resume_config_check.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config_loader.h"
#include "config/schema.h"
#include "core/errors.h"
#include "runtime/checkpointer.h"
#include "report/run_directory.h"

namespace gradshare::cli {

using runtime::newest_checkpoint;

namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

bool changed_to_resume(const std::string& path) {
  return path == "training.epochs" || path == "run.dir" || path == "run.name" ||
         path == "run.output_dir" || starts_with(path, "checkpoint.") ||
         starts_with(path, "logging.") || starts_with(path, "fault_tolerance.");
}

}  // namespace

std::vector<std::string> check_resume_config(const config::ExperimentConfig& now,
                                             const std::string& previous_yaml,
                                             const std::string& source) {
  config::ExperimentConfig previous;
  try {
    previous = config::parse_experiment_text(previous_yaml, source);
  } catch (const core::UserError& error) {
    return {"cannot compare this config with the resumed run's (" + std::string(error.what()) + ")"};
  }
  std::vector<std::string> reported;
  std::string model_keys;
  for (const auto& difference : config::differences(previous, now)) {
    if (changed_to_resume(difference.path)) continue;
    const std::string line = difference.path + ": " + difference.before + " -> " + difference.after;
    if (starts_with(difference.path, "model."))
      model_keys += (model_keys.empty() ? "" : "; ") + line;
    else
      reported.push_back("resuming with a config that differs from " + source + ": " + line);
  }
  if (!model_keys.empty())
    throw core::UserError("cannot resume from " + source + " with a different model (" + model_keys +
                          "): use the model of that run, or another run.dir to start anew");
  return reported;
}

std::string resumed_config_text(const std::string& run_path) {
  const auto directory = report::RunDirectory::attach(run_path);
  if (!newest_checkpoint(directory)) return "";
  std::ifstream in(directory.file("config.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gradshare::cli
