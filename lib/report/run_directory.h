// report/run_directory.h: the folder a training run writes into:
//   runs/<name>-<YYYYmmdd-HHMMSS>/  config.yaml (resolved), metrics.jsonl, rank-<r>.log,
//   model.h5 (final model), checkpoints/ckpt-<iteration>.h5
#pragma once

#include <string>

#include "config/experiment_config.h"

namespace gradshare::report {

class RunDirectory {
 public:
  RunDirectory() = default;
  // Chooses the path: run.dir when set, else <output_dir>/<name>-<timestamp>. Creates nothing.
  static std::string choose_path(const config::RunConfig& run);
  // Creates the folder (and parents) and writes the resolved config, unless it already holds
  // one (a resumed run keeps its directory and its first config).
  static RunDirectory create(const std::string& path, const std::string& resolved_config_yaml);
  // Uses an existing folder (workers, after the master created it).
  static RunDirectory attach(const std::string& path) { return RunDirectory(path); }

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string checkpoint_dir() const { return file("checkpoints"); }

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace gradshare::report
