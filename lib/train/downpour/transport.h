// downpour/transport.h: how Downpour's pushes, acks and pulls travel between the workers and
// the parameter servers: one interface, two implementations, one chosen per job.
//
//   rma        (comm/mpi/train/downpour/rma_*) MPI one-sided windows: workers Put pushes into
//              per-worker slots at the server and Get the shard under a seqlock; the server
//              polls the slots and Puts acks. Pulls cost the server nothing. Fast where hardware
//              moves the bytes: shared memory (one node) or RDMA.
//   two_sided  (comm/mpi/train/downpour/message_*) messages: a push is one message, answered by
//              an ack; a pull is a request answered with the version and the shard. The server
//              does the work, inside its poll. Between nodes joined by TCP, where Open MPI
//              emulates one-sided operations in software with no progress of its own, much
//              faster.
//
// The choice follows transport.data_plane (comm/plane_choice.h): under auto, rma when the job
// runs on one node or every rank has an RDMA device, two_sided otherwise; rma and two_sided
// force one (comm/mpi/train/downpour/mpi_transport.h). The strategy tests run the ranks as
// threads over a third, in-process one (comm/inproc/train/in_process_downpour_transport.h).
// The group session makes it (GroupSession::downpour_transport).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "train/downpour/link.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"

namespace gradshare::train {

class DownpourTransport {
 public:
  virtual ~DownpourTransport() = default;

  // Serves `shard` on this rank, starting from `initial` (the shard's slice of the model).
  virtual std::unique_ptr<ShardServer> serve(int shard, const config::ExperimentConfig& config,
                                             std::span<const float> initial) = 0;
  // This worker's link to `shard` (`worker`: the worker's index, rank - servers).
  virtual std::unique_ptr<ShardLink> link(int shard, int worker,
                                          const config::ExperimentConfig& config) = 0;
  // Reads one consistent version of another rank's shard into `out` and returns it; `meanwhile`
  // runs while the read waits (the master keeps serving shard 0). RuntimeError after
  // `timeout_seconds`.
  virtual std::uint64_t read_shard(int shard, std::span<float> out, double timeout_seconds,
                                   const std::function<void()>& meanwhile) = 0;
  // Collective over the transport's ranks, once at the start: returns when every server has
  // put its shard in place (nobody pushes to or reads a server before).
  virtual void wait_for_servers() = 0;
  // The job under the transport broke (a process failure) and its servers and links are gone:
  // its destruction frees nothing that needs the other ranks.
  virtual void abandon() {}
};

// The ranks a transport between processes reaches the workers at: per worker index, its rank in
// the transport's communicator, -1 once it is gone (a shrink). Servers are ranks 0..K-1.
using WorkerRanks = std::vector<int>;

}  // namespace gradshare::train
