// run_context.h: what every run gets: the resolved config, the run directory, the data,
// and this process's place in the job (an MPI job, or threads of one test process).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "comm/job.h"
#include "config/experiment_config.h"
#include "data/dataset.h"
#include "ft/fault_injection.h"
#include "report/metrics_log.h"
#include "report/run_directory.h"

namespace gradshare::train {
class SharingSession;
class GroupSession;
}  // namespace gradshare::train

namespace gradshare::runtime {

struct RunContext;

// What carries the strategies' own traffic in this job, beyond the job's control channel and
// workers' group: gradient sharing's session (tree, data plane, repair) and the synchronous
// strategies' and Downpour's repairable session (group_session.h: it also makes Downpour's
// transport). The command layer sets the MPI ones, a thread test the in-process ones; what
// they make belongs to the strategies (lib/train).
struct StrategyLinks {
  std::function<std::unique_ptr<train::SharingSession>(RunContext&)> sharing_session;
  std::function<std::unique_ptr<train::GroupSession>(RunContext&)> group_session;
};

struct RunContext {
  config::ExperimentConfig config;
  std::string config_yaml;  // the resolved config, as written to the run directory
  report::RunDirectory run_directory;
  data::DataSplits data;
  comm::Job* job = nullptr;  // not owned; set before anything collective
  StrategyLinks links;
  int rank = 0;
  int size = 1;
  report::MetricsLog metrics;  // open on the master only
  // What this rank is doing, named in the line that reports a rank lost before training
  // began: a start-up phase, then kTraining once the strategy's communicators are set up.
  std::string phase = "starting";
  static constexpr const char* kTraining = "training";

  bool is_master() const { return rank == 0; }
  // Every rank calls this as training begins (spares too): the phase becomes kTraining once
  // every rank got here; comm::LostBeforeTraining when a rank was lost before (Job::all_started).
  void begin_training() {
    if (job != nullptr && !job->all_started(true)) throw comm::LostBeforeTraining();
    phase = kTraining;
  }
  // How an injected fault ends this rank (ft/fault_injection.h): as its job ends one.
  ft::EndRank end_rank_by_fault() const {
    return [job = job](const std::string& kind) { job->end_by_fault(kind); };
  }
  int worker_count() const { return size - 1; }
};

}  // namespace gradshare::runtime
