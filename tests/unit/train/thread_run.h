// thread_run.h: runs a strategy's master and workers as threads of the test process, over an
// in-process job (comm/in_process_job.h), on synthetic data: what a thread test of a strategy
// needs, and its results to check.
#pragma once

#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "data/dataset.h"

namespace gradshare::train::testing {

// Four Gaussian blobs in `features` dimensions, one class each: a model of one hidden layer
// learns them to over 95 % in an epoch or two.
data::DataSplits blobs(std::size_t train, std::size_t test, std::size_t features,
                       std::uint64_t seed);

// A small MLP config for `blobs` with the given strategy, 2 epochs, and `overrides`
// ("section.key=value", as on the command line).
config::ExperimentConfig blobs_config(const std::string& strategy, const std::string& run_dir,
                                      const std::vector<std::string>& overrides = {});

struct ThreadRun {
  std::vector<int> exit_codes;      // per rank; kEndedByFault for a rank a fault injection ended
  std::vector<std::string> errors;  // per rank: what a rank threw, empty if nothing
  std::size_t unreceived = 0;       // control messages nobody received
  std::string run_dir;
};

inline constexpr int kEndedByFault = -9;

// Runs training.strategy on `ranks` threads (rank 0 the master; fault_tolerance.spares of them
// spares) until all return. repairable: a thread that fault_tolerance.inject ends is a failed
// process the others repair (comm/in_process_failures.h), as under ULFM.
ThreadRun run_as_threads(const config::ExperimentConfig& config, const data::DataSplits& data,
                         int ranks, bool repairable = false);

// Test accuracy of a model file on `data.test`.
double file_accuracy(const std::string& path, const config::ExperimentConfig& config,
                     const data::DataSplits& data);

}  // namespace gradshare::train::testing
