// role_fixture.h: the fixture of the role tests (group_roles_test.cpp, sharing_roles_test.cpp,
// downpour_roles_test.cpp): one rank's run context in a run of 1 master + N workers on the
// blobs (thread_run.h), with a run directory of its own that the test removes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "report/run_directory.h"
#include "scripted_session.h"
#include "thread_run.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "runtime/run_context.h"

namespace gradshare::train::testing {

class RoleTest : public ::testing::Test {
 protected:
  // In the constructor, not SetUp: a derived fixture's constructor may make its contexts.
  RoleTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("gradshare_roles_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        data_(blobs(1024, 256, 16, 3)) {
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Rank `rank` of 1 master + `workers` workers; the master alone writes metrics.jsonl.
  runtime::RunContext context(const std::string& strategy, int rank, int workers,
                              const std::vector<std::string>& overrides = {}) {
    runtime::RunContext context;
    context.config = blobs_config(strategy, dir_.string(), overrides);
    context.config_yaml = config::to_yaml(context.config);
    const auto path = report::RunDirectory::choose_path(context.config.run);
    context.run_directory = report::RunDirectory::create(path, context.config_yaml);
    if (rank == 0)
      context.metrics = report::MetricsLog(context.run_directory.file("metrics.jsonl"));
    context.data = data_;
    context.rank = rank;
    context.size = workers + 1;
    context.phase = runtime::RunContext::kTraining;
    job_.place(rank, workers + 1);
    context.job = &job_;
    return context;
  }

  std::int64_t batches(const runtime::RunContext& context) const {
    return runtime::minibatches_per_epoch(context.config, context.data.train);
  }
  std::vector<float> initial_parameters(const runtime::RunContext& context) const {
    auto model = runtime::build_model(context.config);
    return {model.parameters().begin(), model.parameters().end()};
  }
  bool model_written(const runtime::RunContext& context) const {
    return std::filesystem::exists(context.run_directory.file("model.h5"));
  }

  std::filesystem::path dir_;
  data::DataSplits data_;
  ScriptedJob job_;
};

}  // namespace gradshare::train::testing
