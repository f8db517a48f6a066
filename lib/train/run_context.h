// run_context.h: what every strategy gets: the resolved config, the run directory, the data,
// and this process's place in the job (an MPI job, or threads of one test process).
#pragma once

#include <string>

#include "comm/job.h"
#include "config/experiment_config.h"
#include "data/dataset.h"
#include "train/metrics_log.h"
#include "train/run_directory.h"

namespace gradshare::train {

struct RunContext {
  config::ExperimentConfig config;
  std::string config_yaml;  // the resolved config, as written to the run directory
  RunDirectory run_directory;
  data::DataSplits data;
  comm::Job* job = nullptr;  // not owned; set before anything collective
  int rank = 0;
  int size = 1;
  MetricsLog metrics;  // open on the master only
  // What this rank is doing, named in the line that reports a rank lost before training
  // began: a start-up phase, then kTraining once the strategy's communicators are set up.
  std::string phase = "starting";
  static constexpr const char* kTraining = "training";

  bool is_master() const { return rank == 0; }
  int worker_count() const { return size - 1; }
};

}  // namespace gradshare::train
