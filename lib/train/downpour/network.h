// downpour/network.h: what Downpour's master, servers and workers run on: the group session
// (group_session.h: the control channel, the repair, the spares) and the pushes' and pulls'
// transport (downpour/transport.h) made on the session's job, made again after every repair.
//
// After a repair (downpour/recovery.h) every live process rebuilds the transport in the same
// order (collective); each server moves its shard onto the new transport (carry) and tells every
// live worker the last push it applied from it (send_resync). A parameter server cannot be
// restored in-job: its shard lives only in its process, so a lost server ends the run with a
// line that says what is lost (rebuild throws), and a rerun resumes every shard from the newest
// checkpoint.
#pragma once

#include <memory>
#include <vector>

#include "comm/control_channel.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"
#include "train/group_session.h"
#include "train/run_context.h"

namespace gradshare::train {

class DownpourNetwork {
 public:
  // Makes the transport: collective over the session's job.
  DownpourNetwork(RunContext& context, GroupSession& session, const DownpourLayout& layout);

  GroupSession& session() { return session_; }
  comm::ControlChannel& control() { return session_.control(); }
  DownpourTransport& transport() { return *transport_; }
  const DownpourLayout& layout() const { return layout_; }
  // Logical ranks of the live workers (the servers left out), ascending.
  std::vector<int> live_workers() const;
  // Logical ranks of every live process but the master: the servers 1..K-1, then the workers.
  std::vector<int> live_ranks() const { return session_.live_workers(); }

  ~DownpourNetwork();

  // After the session's repair, collective over the live processes: RuntimeError when the
  // repair lost a parameter server; otherwise makes a new transport. The old one stays as it is
  // until the next rebuild (then abandoned), so that its servers and links can hand over.
  void rebuild();
  // `old`'s shard, moved onto the new transport.
  std::unique_ptr<ShardServer> carry(ShardServer& old, const config::ExperimentConfig& config);
  // A server after rebuild(): tells every live worker the last push it applied from it.
  void send_resync(ShardServer& server);

 private:
  RunContext& context_;
  GroupSession& session_;
  const DownpourLayout& layout_;
  std::unique_ptr<DownpourTransport> transport_;
  std::unique_ptr<DownpourTransport> previous_;  // replaced by the latest rebuild
};

}  // namespace gradshare::train
