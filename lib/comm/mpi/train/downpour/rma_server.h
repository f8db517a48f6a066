// downpour/rma_server.h: a parameter-server shard living in this rank's RMA window (layout in
// downpour/protocol.h). poll() reads the workers' push slots: a slot whose seq advanced holds a
// whole push (the worker flushed the rest before Putting the seq); a worker that dies mid-push
// leaves a slot whose seq never advanced, and the server never reads that half-written payload.
// Each push is applied under the seqlock (odd while the parameters change, so readers retry)
// and acknowledged by Putting the ack word into the pushing worker's window. Pulls need nothing
// from the server: workers Get the shard themselves.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/mpi/window.h"
#include "config/experiment_config.h"
#include "train/downpour/protocol.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"

namespace gradshare::train {

class RmaShardServer final : public ShardServer {
 public:
  // Writes `initial` (the shard's slice of the seeded model) into the window. `window` is this
  // rank's Downpour window and must outlive the server.
  RmaShardServer(comm::Window& window, const DownpourLayout& layout, WorkerRanks worker_ranks,
                 int shard, const config::ExperimentConfig& config,
                 std::span<const float> initial);

  std::size_t poll() override;
  std::span<const float> parameters() const override { return shard_memory(); }

  void publish_carried_state() override;

 private:
  bool apply_if_posted(int worker);
  std::span<float> shard_memory() const;
  void store_seqlock(std::uint64_t value);

  comm::Window& window_;
  ShardLayout shard_layout_;
  WorkerRanks worker_ranks_;
  std::vector<std::uint64_t> ack_values_;  // origin buffers of the ack Puts
};

}  // namespace gradshare::train
