// in_process_sharing_session.h: a gradient-sharing session whose ranks are threads of one test
// process (comm/inproc/in_process_job.h): the configured tree, the job's in-process control channel
// and a data plane of in-process rings along the tree. On a repairable hub a thread that dies
// is repaired as MpiSharingSession repairs a process under ULFM: shrink, or replace with a
// spare thread (the last fault_tolerance.spares threads); spawning needs MPI.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "comm/inproc/in_process_job.h"
#include "topology/mode.h"
#include "runtime/run_context.h"
#include "train/sharing/session.h"

namespace gradshare::train {

class InProcessSharingSession : public SharingSession {
 public:
  InProcessSharingSession(runtime::RunContext& context, comm::InProcessJob& job);

  bool is_spare() const override { return context_.rank < 0; }
  bool wait_for_assignment() override;
  comm::ControlChannel& control() override { return *control_; }
  comm::ControlChannel* heartbeats() override { return heartbeats_.get(); }
  comm::DataPlane& plane() override { return *plane_; }
  const topology::Tree& tree() const override { return tree_; }
  std::vector<int> live_workers() const override { return live_; }
  bool fault_tolerant() const override { return job_.fault_tolerant(); }
  const std::map<int, ft::ProcessIdentity>& processes() const override { return processes_; }
  bool master_on_another_node() const override { return false; }  // threads of one process
  RepairOutcome repair(const std::vector<std::uint8_t>& join_info) override;
  void release_spares() override;

 private:
  // This rank's channel and plane on the current tree.
  void build();
  // The tree after `repair`, as every rank's thread reads it from the one the repair made.
  void adopt(const comm::InProcessRepair& repair);

  runtime::RunContext& context_;
  comm::InProcessJob& job_;
  // The job's current tree, one object for every thread: made new by whichever thread completes
  // a repair, copied by every thread once the repair returns (the repair's lock orders the two).
  topology::Tree& job_tree_;
  topology::Mode mode_;
  topology::Tree tree_;
  std::vector<int> live_;  // logical ranks of the live workers
  std::unique_ptr<comm::ControlChannel> control_;
  std::unique_ptr<comm::ControlChannel> heartbeats_;
  comm::DataPlane* plane_ = nullptr;
  std::map<int, ft::ProcessIdentity> processes_;  // one process: none to tell apart
};

}  // namespace gradshare::train
