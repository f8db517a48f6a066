// sharing/in_process_session.h: a gradient-sharing session whose ranks are threads of one test
// process (comm/in_process_job.h): the configured tree, the job's in-process control channel
// and a data plane of in-process rings along the tree. Nothing can be repaired: a thread that
// fails ends the test.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "comm/in_process_job.h"
#include "train/run_context.h"
#include "train/sharing/session.h"

namespace gradshare::train {

class InProcessSharingSession : public SharingSession {
 public:
  InProcessSharingSession(RunContext& context, comm::InProcessJob& job);

  comm::ControlChannel& control() override { return *control_; }
  comm::DataPlane& plane() override { return plane_; }
  const topology::Tree& tree() const override { return tree_; }
  std::vector<int> live_workers() const override;
  bool fault_tolerant() const override { return false; }
  const std::map<int, ft::ProcessIdentity>& processes() const override { return processes_; }
  RepairOutcome repair(const std::vector<std::uint8_t>& join_info) override;
  void release_spares() override {}

 private:
  topology::Tree tree_;
  std::unique_ptr<comm::ControlChannel> control_;
  comm::DataPlane& plane_;
  std::map<int, ft::ProcessIdentity> processes_;  // one process: none to tell apart
};

}  // namespace gradshare::train
