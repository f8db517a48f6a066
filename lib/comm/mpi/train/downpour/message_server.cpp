// downpour/message_server.cpp: MessageShardServer.
#include "comm/mpi/train/downpour/message_server.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "comm/mpi/abandoned_requests.h"
#include "comm/mpi/communicator.h"
#include "comm/mpi/mpi_error.h"
#include "core/errors.h"

namespace gradshare::train {

MessageShardServer::MessageShardServer(MPI_Comm comm, const DownpourLayout& layout,
                                       WorkerRanks worker_ranks, int shard,
                                       const config::ExperimentConfig& config,
                                       std::span<const float> initial)
    : ShardServer(layout, shard, config),
      comm_(comm),
      worker_ranks_(std::move(worker_ranks)),
      shard_(initial.begin(), initial.end()),
      incoming_(static_cast<std::size_t>(layout.workers())),
      sends_(comm) {
  GS_CHECK(shard_.size() == layout.shard(shard).size(),
           "initial shard of " + std::to_string(shard_.size()));
}

MessageShardServer::~MessageShardServer() {
  if (!comm::mpi_active()) return;
  for (Incoming& push : incoming_) comm::abandon_receive(push.request, std::move(push.message));
}

std::size_t MessageShardServer::poll() {
  sends_.complete();
  const std::size_t applied = round_robin([this](int worker) { return apply_if_arrived(worker); });
  return applied + answer_pulls();
}

bool MessageShardServer::apply_if_arrived(int worker) {
  Incoming& push = incoming_[static_cast<std::size_t>(worker)];
  const int rank = worker_ranks_.at(static_cast<std::size_t>(worker));
  if (rank < 0) return false;  // gone (a shrink)
  if (push.request == MPI_REQUEST_NULL) {
    int found = 0;
    MPI_Message handle = MPI_MESSAGE_NULL;
    MPI_Status status;
    comm::check_mpi(MPI_Improbe(rank, DownpourTag::kPush, comm_, &found,
                                &handle, &status),
                    "MPI_Improbe");
    if (!found) return false;
    int count = 0;
    comm::check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    push.message.resize(static_cast<std::size_t>(std::max(count, 0)));
    comm::check_mpi(MPI_Imrecv(push.message.data(), count, MPI_BYTE, &handle, &push.request),
                    "MPI_Imrecv");
  }
  int done = 0;
  comm::check_mpi(MPI_Test(&push.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  if (!done) return false;
  apply(worker, push.message);
  return true;
}

void MessageShardServer::apply(int worker, const std::vector<std::uint8_t>& message) {
  PushHeader header;
  if (message.size() < sizeof header)
    updater_.reject(worker, "a message of " + std::to_string(message.size()) +
                                " bytes is shorter than a push header");
  std::memcpy(&header, message.data(), sizeof header);
  const std::span<const std::uint8_t> payload(message.data() + sizeof header,
                                              message.size() - sizeof header);
  const std::uint64_t ack = updater_.prepare(worker, header, payload, shard_);
  updater_.apply(shard_);
  std::vector<std::uint8_t> bytes(sizeof ack);
  std::memcpy(bytes.data(), &ack, sizeof ack);
  sends_.send(worker_ranks_.at(static_cast<std::size_t>(worker)), DownpourTag::kAck, std::move(bytes));
}

std::size_t MessageShardServer::answer_pulls() {
  std::size_t answered = 0;
  for (;;) {
    int found = 0;
    MPI_Message handle = MPI_MESSAGE_NULL;
    MPI_Status status;
    comm::check_mpi(
        MPI_Improbe(MPI_ANY_SOURCE, DownpourTag::kPullRequest, comm_, &found, &handle, &status),
        "MPI_Improbe");
    if (!found) return answered;
    comm::check_mpi(MPI_Mrecv(nullptr, 0, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "MPI_Mrecv");
    std::vector<std::uint8_t> reply(kPullReplyHeaderBytes + shard_.size() * sizeof(float));
    const std::uint64_t version = updater_.version();
    std::memcpy(reply.data(), &version, sizeof version);
    std::memcpy(reply.data() + kPullReplyHeaderBytes, shard_.data(), shard_.size() * sizeof(float));
    sends_.send(status.MPI_SOURCE, DownpourTag::kPullReply, std::move(reply));
    ++answered;
  }
}

}  // namespace gradshare::train
