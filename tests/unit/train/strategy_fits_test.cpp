// strategy_fits_test.cpp: check_strategy_fits turns a job that cannot run as configured into a
// user error naming the key, before anything is written.
#include <gtest/gtest.h>

#include <string>

#include "config/experiment_config.h"
#include "core/errors.h"
#include "train/strategy.h"
#include "train/strategy_registry.h"

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

// The registry holds every name the config accepts, each distributed strategy with one way for
// a replacement to join, and refuses any other name.
TEST(StrategyRegistry, EveryStrategyOnce) {
  const std::vector<std::string> names = {"gradient_sharing", "parameter_averaging", "downpour",
                                          "allreduce", "local"};
  ASSERT_EQ(strategies().size(), names.size());
  for (const auto& name : names) {
    const auto& strategy = strategy_named(name);
    EXPECT_EQ(strategy.name, name);
    EXPECT_NE(strategy.run, nullptr) << name;
    const int joins = (strategy.replace_in_group != nullptr) + (strategy.replace_in_sharing != nullptr);
    EXPECT_EQ(joins, strategy.distributed ? 1 : 0) << name;
  }
  EXPECT_THROW(strategy_named("hogwild"), core::UserError);
}

}  // namespace
}  // namespace gradshare::train
