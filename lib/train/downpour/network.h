// downpour/network.h: what Downpour's master, servers and workers run on: the group session
// (group_session.h: the control channel, the repair, the spares) and the pushes' and pulls'
// transport (downpour/transport.h) made on the session's job, made again after every repair.
//
// In-job recovery of a lost worker under ULFM (fault_tolerance.on_worker_failure replace, shrink
// or abort), after a transport call fails with a process failure on any live process:
//
//  servers (master = server 0)             workers                    replacement
//  session repair  <----------------------> session repair <--------> joins the repair
//  rebuild: a new transport (collective, in the same order on every live process)
//  carry: the shard onto it (parameters,    relink: links onto it (seq
//    optimizer, version, seq applied per      counters, push in flight,
//    worker, published to the transport)      encoder residual)
//  (a lost server's replacement rebuilds     a lost server's replacement gets
//   its shard: shard_rebuild.h)               the pushes kept for it
//  DownpourResync {applied} to each live --> resync: applied push acked;  continues the seq
//    worker                                  one lacking sent again        from `applied`
//  master: the partitions in flight handed out again, then
//  DownpourResume {has_done, has_final_model} --> goes back to the step    pulls every shard
//                                                 whose message was lost
//
// A failure during any of it starts it again; every push is applied once (a server takes only
// the next seq of a slot), and the end of the run checks that per worker and shard
// (DownpourServerEnd). What a dead worker had not pushed yet (under n_push steps' worth) is lost
// with it; its partition is trained again. After a shrink the servers keep weighing pushes by
// the starting number of workers (PushWeight: each worker's push weighs the same).
//
// A lost parameter server is replaced like a worker and its replacement rebuilds the shard
// from the master's newest snapshot of it and the pushes the workers kept since
// (downpour/shard_rebuild.h); under shrink or abort nothing takes its place, so the run ends
// with a line that says what is lost (rebuild throws), and a rerun resumes every shard from the
// newest checkpoint. The old transports are abandoned, not freed (their windows or
// communicators stay allocated): a repair costs that much memory.
#pragma once

#include <memory>
#include <vector>

#include "comm/control_channel.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"
#include "train/group_session.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class DownpourNetwork {
 public:
  // Makes the transport: collective over the session's job.
  DownpourNetwork(runtime::RunContext& context, GroupSession& session,
                  const DownpourLayout& layout);

  GroupSession& session() { return session_; }
  comm::ControlChannel& control() { return session_.control(); }
  DownpourTransport& transport() { return *transport_; }
  const DownpourLayout& layout() const { return layout_; }
  // Logical ranks of the live workers (the servers left out), ascending.
  std::vector<int> live_workers() const;
  // Logical ranks of every live process but the master: the servers 1..K-1, then the workers.
  std::vector<int> live_ranks() const { return session_.live_workers(); }

  ~DownpourNetwork();

  // After the session's repair, collective over the live processes: JobCannotGoOn when the
  // repair lost a parameter server and nothing replaced it; otherwise makes a new transport. The old one stays as it is
  // until the next rebuild that succeeds (then abandoned), so that its servers and links can
  // hand over.
  void rebuild();
  // `old`'s shard, moved onto the new transport.
  std::unique_ptr<ShardServer> carry(ShardServer& old, const config::ExperimentConfig& config);
  // A server after rebuild(): tells every live worker the last push it applied from it.
  void send_resync(ShardServer& server);
  // Keeps `links` allocated as long as the transports: a worker that became the master leaves
  // its links here (a Get or Put a failure interrupted may still target their buffers).
  void keep_alive(std::vector<std::unique_ptr<ShardLink>> links);

 private:
  runtime::RunContext& context_;
  GroupSession& session_;
  const DownpourLayout& layout_;
  std::unique_ptr<DownpourTransport> transport_;
  std::unique_ptr<DownpourTransport> previous_;  // replaced by the latest rebuild
  std::vector<std::unique_ptr<ShardLink>> kept_links_;  // keep_alive
};

}  // namespace gradshare::train
