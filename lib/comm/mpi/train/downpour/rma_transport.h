// downpour/rma_transport.h: Downpour over MPI one-sided RMA: the window every rank allocates
// (layout in downpour/protocol.h), its shard servers (downpour/rma_server.h) and worker links
// (downpour/rma_link.h).
#pragma once

#include <mpi.h>

#include "comm/mpi/window.h"
#include "train/downpour/transport.h"

namespace gradshare::train {

class RmaDownpourTransport final : public DownpourTransport {
 public:
  // Collective over `comm`: allocates this rank's window (`rank`: its logical rank).
  RmaDownpourTransport(MPI_Comm comm, int rank, const DownpourLayout& layout,
                       WorkerRanks worker_ranks);

  std::unique_ptr<ShardServer> serve(int shard, const config::ExperimentConfig& config,
                                     std::span<const float> initial) override;
  std::unique_ptr<ShardLink> link(int shard, int worker,
                                  const config::ExperimentConfig& config) override;
  // Reads under the seqlock without the server's help: `meanwhile` is not needed.
  std::uint64_t read_shard(int shard, std::span<float> out, double timeout_seconds,
                           const std::function<void()>& meanwhile) override;
  void wait_for_servers() override;
  void abandon() override { window_.abandon(); }

  comm::Window& window() { return window_; }

 private:
  MPI_Comm comm_;
  const DownpourLayout& layout_;
  WorkerRanks worker_ranks_;
  comm::Window window_;
};

}  // namespace gradshare::train
