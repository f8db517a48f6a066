// strategy_fits_test.cpp: check_strategy_fits turns a job that cannot run as configured into a
// user error naming the key, before anything is written.
#include <gtest/gtest.h>

#include <string>

#include "config/experiment_config.h"
#include "core/errors.h"
#include "train/strategy.h"

namespace gradshare::train {
namespace {

std::string error_of(const config::ExperimentConfig& config, int ranks) {
  try {
    check_strategy_fits(config, ranks);
  } catch (const core::UserError& error) {
    return error.what();
  }
  return "";
}

TEST(StrategyFits, Spares) {
  config::ExperimentConfig config;
  config.training.strategy = "gradient_sharing";
  config.fault_tolerance.spares = 1;
  EXPECT_EQ(error_of(config, 4), "");  // master, 2 workers, 1 spare
  EXPECT_NE(error_of(config, 2).find("fault_tolerance.spares 1 leaves no worker"), std::string::npos);
  config.training.strategy = "allreduce";
  EXPECT_EQ(error_of(config, 4), "");
  config.training.strategy = "parameter_averaging";
  EXPECT_EQ(error_of(config, 4), "");
  config.training.strategy = "downpour";
  EXPECT_EQ(error_of(config, 3), "");  // server, worker, spare
  // The spare is no server and no worker.
  EXPECT_NE(error_of(config, 2).find("needs more ranks than servers, but the job has 1 besides "
                                     "its spares"),
            std::string::npos);
  config.training.strategy = "allreduce";
  EXPECT_EQ(error_of(config, 1), "");  // one process: spares do not apply
}

TEST(StrategyFits, LocalAndDownpour) {
  config::ExperimentConfig config;
  config.training.strategy = "local";
  EXPECT_NE(error_of(config, 3).find("runs in one process"), std::string::npos);
  config.training.strategy = "downpour";
  config.downpour.servers = 2;
  EXPECT_NE(error_of(config, 2).find("needs more ranks than servers"), std::string::npos);
  EXPECT_EQ(error_of(config, 4), "");
}

}  // namespace
}  // namespace gradshare::train
