// train_command.h: `gradshare train CONFIG [overrides]`: starts MPI (a singleton without
// mpirun), loads the config on every rank, creates the run directory, loads the data and runs
// the configured strategy. Returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace gradshare::cli {

int train_command(const std::string& config_path, const std::vector<std::string>& overrides);

}  // namespace gradshare::cli
