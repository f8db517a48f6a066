// downpour/rma_transport.cpp: RmaDownpourTransport.
#include "comm/mpi/train/downpour/rma_transport.h"

#include "comm/mpi/train/downpour/rma_link.h"
#include "comm/mpi/train/downpour/rma_server.h"
#include "comm/mpi/mpi_error.h"

#include <utility>

namespace gradshare::train {

RmaDownpourTransport::RmaDownpourTransport(MPI_Comm comm, int rank, const DownpourLayout& layout,
                                           WorkerRanks worker_ranks)
    : comm_(comm),
      layout_(layout),
      worker_ranks_(std::move(worker_ranks)),
      window_(comm, layout.window_bytes(rank)) {}

void RmaDownpourTransport::wait_for_servers() {
  comm::check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

std::unique_ptr<ShardServer> RmaDownpourTransport::serve(int shard,
                                                         const config::ExperimentConfig& config,
                                                         std::span<const float> initial) {
  return std::make_unique<RmaShardServer>(window_, layout_, worker_ranks_, shard, config,
                                          initial);
}

std::unique_ptr<ShardLink> RmaDownpourTransport::link(int shard, int worker,
                                                      const config::ExperimentConfig& config) {
  return std::make_unique<RmaShardLink>(window_, layout_, shard, worker, config);
}

std::uint64_t RmaDownpourTransport::read_shard(int shard, std::span<float> out,
                                               double timeout_seconds,
                                               const std::function<void()>& /*meanwhile*/) {
  return train::read_shard(window_, shard, out, timeout_seconds);
}

}  // namespace gradshare::train
