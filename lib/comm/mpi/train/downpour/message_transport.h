// downpour/message_transport.h: Downpour over two-sided messages (downpour/message_wire.h): the
// transport's own communicator, its shard servers (downpour/message_server.h) and worker links
// (downpour/message_link.h).
#pragma once

#include <mpi.h>

#include "comm/mpi/communicator.h"
#include "train/downpour/transport.h"

namespace gradshare::train {

class MessageDownpourTransport final : public DownpourTransport {
 public:
  // Collective over `comm` (duplicated for the transport).
  MessageDownpourTransport(MPI_Comm comm, const DownpourLayout& layout, WorkerRanks worker_ranks);

  std::unique_ptr<ShardServer> serve(int shard, const config::ExperimentConfig& config,
                                     std::span<const float> initial) override;
  std::unique_ptr<ShardLink> link(int shard, int worker,
                                  const config::ExperimentConfig& config) override;
  std::uint64_t read_shard(int shard, std::span<float> out, double timeout_seconds,
                           const std::function<void()>& meanwhile) override;
  void wait_for_servers() override;
  void abandon() override { comm_.release(); }

  // The transport's communicator (its ranks are the job's).
  MPI_Comm comm() const { return comm_.get(); }

 private:
  const DownpourLayout& layout_;
  WorkerRanks worker_ranks_;
  comm::Communicator comm_;
};

}  // namespace gradshare::train
