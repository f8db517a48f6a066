// downpour/message_transport.cpp: MessageDownpourTransport.
#include "comm/mpi/train/downpour/message_transport.h"

#include <algorithm>
#include <utility>

#include "comm/mpi/mpi_error.h"

#include "core/errors.h"
#include "comm/mpi/train/downpour/message_link.h"
#include "comm/mpi/train/downpour/message_server.h"

namespace gradshare::train {

MessageDownpourTransport::MessageDownpourTransport(MPI_Comm comm, const DownpourLayout& layout,
                                                   WorkerRanks worker_ranks)
    : layout_(layout),
      worker_ranks_(std::move(worker_ranks)),
      comm_(comm::Communicator::duplicate(comm)) {}

void MessageDownpourTransport::wait_for_servers() {
  comm::check_mpi(MPI_Barrier(comm_.get()), "MPI_Barrier");
}

std::unique_ptr<ShardServer> MessageDownpourTransport::serve(int shard,
                                                             const config::ExperimentConfig& config,
                                                             std::span<const float> initial) {
  return std::make_unique<MessageShardServer>(comm_.get(), layout_, worker_ranks_, shard, config,
                                              initial);
}

std::unique_ptr<ShardLink> MessageDownpourTransport::link(int shard, int worker,
                                                          const config::ExperimentConfig& config) {
  return std::make_unique<MessageShardLink>(comm_.get(), layout_, shard, worker, config);
}

std::uint64_t MessageDownpourTransport::read_shard(int shard, std::span<float> out,
                                                   double timeout_seconds,
                                                   const std::function<void()>& meanwhile) {
  GS_CHECK(out.size() == layout_.shard(shard).size(),
           "read of " + std::to_string(out.size()) + " values");
  MessagePull pull(comm_.get(), shard, out.size());
  pull.start();
  pull.finish(timeout_seconds, meanwhile);
  std::copy(pull.shard().begin(), pull.shard().end(), out.begin());
  return pull.version();
}

}  // namespace gradshare::train
