// downpour/message_server.h: a parameter-server shard served over two-sided messages
// (downpour/message_wire.h). poll() gives each worker a turn in round-robin: a push already
// being received is completed when it has arrived, else the worker's next push is probed
// (MPI_Improbe) and its receive posted (MPI_Imrecv); a complete push is validated and applied
// exactly as the RMA server does, and acknowledged with the ack word. Then poll() answers every
// pull request waiting (from workers or the master) with the shard's version and a copy of the
// shard. Every place that serves the shard calls poll(), so pulls are answered wherever pushes
// are applied.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

#include "config/experiment_config.h"
#include "comm/mpi/train/downpour/message_wire.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"

namespace gradshare::train {

class MessageShardServer final : public ShardServer {
 public:
  // `comm` is the transport's communicator; `initial` the shard's slice of the seeded model.
  // `worker_ranks`: where the workers are in `comm` (a gone worker is never polled).
  MessageShardServer(MPI_Comm comm, const DownpourLayout& layout, WorkerRanks worker_ranks,
                     int shard, const config::ExperimentConfig& config,
                     std::span<const float> initial);
  // Pushes still being received (error paths) are abandoned (comm::abandon_receive).
  ~MessageShardServer() override;

  std::size_t poll() override;
  std::span<const float> parameters() const override { return shard_; }

  void publish_carried_state() override {}  // pulls read the updater's version

 private:
  // A worker's push on its way in.
  struct Incoming {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::uint8_t> message;
  };

  bool apply_if_arrived(int worker);
  void apply(int worker, const std::vector<std::uint8_t>& message);
  std::size_t answer_pulls();

  MPI_Comm comm_;
  WorkerRanks worker_ranks_;
  std::vector<float> shard_;
  std::vector<Incoming> incoming_;  // per worker
  SendQueue sends_;                 // acks and pull replies on their way
};

}  // namespace gradshare::train
