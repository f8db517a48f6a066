#include "report/run_directory.h"

#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace gradshare::report {

namespace fs = std::filesystem;

std::string RunDirectory::choose_path(const config::RunConfig& run) {
  if (!run.dir.empty()) return run.dir;
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return run.output_dir + "/" + run.name + "-" + stamp;
}

RunDirectory RunDirectory::create(const std::string& path, const std::string& resolved_config_yaml) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw core::UserError(path + ": cannot create run directory (" + error.message() + ")");
  fs::create_directories(path + "/checkpoints", error);
  const std::string config_path = path + "/config.yaml";
  if (!fs::exists(config_path)) {
    const std::string temporary = config_path + ".tmp";
    {
      std::ofstream out(temporary);
      out << resolved_config_yaml;
      if (!out) throw core::RuntimeError(temporary + ": cannot write the resolved config");
    }
    fs::rename(temporary, config_path);
  }
  return RunDirectory(path);
}

}  // namespace gradshare::report
