// master_base.h: what every strategy's master (rank 0, which does not train) shares: the model
// it evaluates and saves, its checkpointer, epoch reporter and peak-memory summary; the loop
// (master_loop.h) over its session's control channel; a stop request and a worker's divergence,
// each logged once; the exit code they leave; and the end of the job: Shutdown to the ranks it
// ends, the spares released, and the line that asks a scheduler to requeue a stopped run.
#pragma once

#include <string>
#include <vector>

#include "nn/model.h"
#include "runtime/checkpointer.h"
#include "runtime/epoch_report.h"
#include "runtime/peak_memory.h"
#include "runtime/run_context.h"
#include "train/job_session.h"
#include "train/master_loop.h"
#include "train/messages.h"

namespace gradshare::train {

class MasterBase : public MasterRole {
 public:
  // The master loop over the session's control channel (a repair replaces it), until the
  // run's exit code: what a strategy's run function calls once its master is built.
  int run_loop();

 protected:
  MasterBase(runtime::RunContext& context, JobSession& session, nn::Model model);

  comm::ControlChannel& control() { return job_session_.control(); }

  // The stop plan of the masters that hand out partitions (gradient sharing, Downpour).
  static constexpr const char* kFinishPartitionsInFlight =
      "finishing the partitions in flight before the stop checkpoint";

  // A stop request: "<why>: <plan>", or for this rank's own signal the stop-request line that
  // names `plan`; only the first request of the run is logged.
  void request_stop(const std::string& plan, const std::string& why = "");
  // Under fault_tolerance.on_worker_failure: abort, after a repair: the run stops as after a stop
  // signal; "fault_tolerance.on_worker_failure is abort: <plan>" is logged at the first repair
  // whatever stopped the run before. True when the policy is abort.
  bool stop_if_failure_aborts(const std::string& plan);
  // A worker's divergence guard fired: logged once ("on rank W at its step S: reason"; `cause`
  // empty: the learning rate's, runtime/divergence_guard.h). Nothing is saved after it.
  void note_divergence(int worker, const Diverged& diverged, const std::string& cause = "");
  // kExitDiverged after a divergence, kExitRequeue after a stop, else kExitOk.
  int exit_code() const;
  // Once the run's results are written: Shutdown{code} to `ranks` (every rank the master
  // ends), the spares released, and the line a diverged or stopped run ends with.
  void end_job(const std::vector<int>& ranks, int code);

  runtime::RunContext& context_;
  const config::ExperimentConfig& cfg_;
  nn::Model model_;
  runtime::Checkpointer checkpointer_;
  runtime::EpochReporter reporter_;
  runtime::PeakMemory peak_memory_;
  bool stopping_ = false;  // a stop request: finish what is in flight, checkpoint, exit 75
  bool diverged_ = false;  // a worker's divergence guard fired: end the run, save nothing

 private:
  JobSession& job_session_;
  bool abort_logged_ = false;  // stop_if_failure_aborts's line
};

}  // namespace gradshare::train
