// downpour/message_link.cpp: MessagePull and MessageShardLink.
#include "comm/mpi/train/downpour/message_link.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "comm/mpi/communicator.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/abandoned_requests.h"
#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::train {

MessagePull::MessagePull(MPI_Comm comm, int server, std::size_t floats)
    : comm_(comm),
      server_(server),
      floats_(floats),
      reply_(kPullReplyHeaderBytes + floats * sizeof(float)) {
  GS_CHECK(reply_.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "two-sided Downpour shards are limited to 2 GiB");
}

MessagePull::~MessagePull() {
  if (!in_flight_ || !comm::mpi_active()) return;
  comm::abandon_receive(reply_request_, std::move(reply_));
  comm::abandon_send(request_, {});  // empty: MPI completes it on its own
}

void MessagePull::start() {
  GS_CHECK(!in_flight_, "a shard pull is already in flight");
  comm::check_mpi(MPI_Irecv(reply_.data(), static_cast<int>(reply_.size()), MPI_BYTE, server_,
                            DownpourTag::kPullReply, comm_, &reply_request_),
                  "MPI_Irecv");
  comm::check_mpi(
      MPI_Isend(nullptr, 0, MPI_BYTE, server_, DownpourTag::kPullRequest, comm_, &request_),
      "MPI_Isend");
  in_flight_ = true;
}

void MessagePull::finish(double timeout_seconds, const std::function<void()>& meanwhile) {
  GS_CHECK(in_flight_, "no shard pull in flight");
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  MPI_Request requests[] = {request_, reply_request_};
  for (;;) {
    int done = 0;
    MPI_Status statuses[2];
    comm::check_mpi_statuses(MPI_Testall(2, requests, &done, statuses), statuses, "MPI_Testall");
    request_ = requests[0];
    reply_request_ = requests[1];
    if (done) break;
    if (deadline.expired())
      throw core::RuntimeError("timed out after " + std::to_string(timeout_seconds) +
                               " s waiting for parameter server " + std::to_string(server_) +
                               " to answer a pull");
    if (meanwhile) meanwhile();
    backoff.wait();
  }
  in_flight_ = false;
}

std::uint64_t MessagePull::version() const {
  std::uint64_t version = 0;
  std::memcpy(&version, reply_.data(), sizeof version);
  return version;
}

std::span<const float> MessagePull::shard() const {
  return {reinterpret_cast<const float*>(reply_.data() + kPullReplyHeaderBytes), floats_};
}

MessageShardLink::MessageShardLink(MPI_Comm comm, const DownpourLayout& layout, int shard,
                                   int worker, const config::ExperimentConfig& config)
    : ShardLink(layout, shard, worker, config),
      comm_(comm),
      sends_(comm),
      ack_(sizeof(std::uint64_t)),
      pull_(comm, shard, range().size()) {}

MessageShardLink::~MessageShardLink() { comm::abandon_receive(ack_request_, std::move(ack_)); }

void MessageShardLink::send_push(const PushHeader& header, std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> message(sizeof header + payload.size());
  std::memcpy(message.data(), &header, sizeof header);
  if (!payload.empty()) std::memcpy(message.data() + sizeof header, payload.data(), payload.size());
  comm::check_mpi(MPI_Irecv(ack_.data(), static_cast<int>(ack_.size()), MPI_BYTE, server(),
                            DownpourTag::kAck, comm_, &ack_request_),
                  "MPI_Irecv");
  sends_.send(server(), DownpourTag::kPush, std::move(message));
}

void MessageShardLink::advance(DownpourReport& report) {
  if (ack_request_ != MPI_REQUEST_NULL) {
    int done = 0;
    comm::check_mpi(MPI_Test(&ack_request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      std::uint64_t word = 0;
      std::memcpy(&word, ack_.data(), sizeof word);
      acknowledge(word, report);
    }
  }
  sends_.complete();  // after an ack, the push it acknowledges has been received
}

void MessageShardLink::start_pull(DownpourReport& report) {
  pull_.start();
  report.pull_bytes += static_cast<std::int64_t>(pull_.bytes());
}

std::span<const float> MessageShardLink::finish_pull(DownpourReport& report,
                                                     double timeout_seconds,
                                                     const std::function<void()>& meanwhile) {
  pull_.finish(timeout_seconds, meanwhile);
  set_base_version(pull_.version());
  ++report.pulls;
  return pull_.shard();
}

}  // namespace gradshare::train
