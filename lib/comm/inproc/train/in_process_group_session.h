// in_process_group_session.h: the synchronous strategies' session (group_session.h) whose ranks
// are threads of one test process (comm/inproc/in_process_job.h). On a repairable hub a thread that
// dies is repaired as MpiGroupSession repairs a process under ULFM: shrink, or replace with a
// spare thread (the last fault_tolerance.spares threads); spawning needs MPI.
#pragma once

#include <memory>
#include <vector>

#include "comm/inproc/in_process_job.h"
#include "train/group_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class InProcessGroupSession : public GroupSession {
 public:
  InProcessGroupSession(runtime::RunContext& context, comm::InProcessJob& job);

  bool is_spare() const override { return context_.rank < 0; }
  bool wait_for_assignment() override;
  comm::ControlChannel& control() override { return *control_; }
  comm::WorkerGroup& workers() override;
  std::vector<int> live_workers() const override { return live_; }
  bool fault_tolerant() const override { return job_.fault_tolerant(); }
  RepairOutcome repair(const std::vector<std::uint8_t>& join_info) override;
  void release_spares() override;
  std::unique_ptr<DownpourTransport> downpour_transport(runtime::RunContext& context,
                                                        const DownpourLayout& layout) override;

 private:
  // The live workers after `repair`, then this rank's channel and group.
  void adopt(const comm::InProcessRepair& repair);

  runtime::RunContext& context_;
  comm::InProcessJob& job_;
  std::vector<int> live_;  // logical ranks of the live workers
  std::unique_ptr<comm::ControlChannel> control_;
  std::unique_ptr<comm::WorkerGroup> workers_;  // null on the master
};

}  // namespace gradshare::train
