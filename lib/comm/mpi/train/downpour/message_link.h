// downpour/message_link.h: a worker's shard link over two-sided messages
// (downpour/message_wire.h).
//
// A push is one message (header and payload) sent at once, with the receive for its ack posted
// before it; advance() takes the ack when it has arrived. A pull posts the receive of the reply,
// then sends the request; finish_pull() waits for the reply (by then it has usually arrived,
// while the worker computed a step). Pulls are consistent by construction: the server copies
// the shard between two pushes, so pull_retries stays 0.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "config/experiment_config.h"
#include "train/downpour/link.h"
#include "comm/mpi/train/downpour/message_wire.h"
#include "train/downpour/protocol.h"

namespace gradshare::train {

// One pull of a shard over messages: the request, and the reply with the version and the shard.
class MessagePull {
 public:
  MessagePull(MPI_Comm comm, int server, std::size_t floats);
  // A pull still in flight (error paths) is abandoned (comm::abandon_receive).
  ~MessagePull();
  MessagePull(const MessagePull&) = delete;
  MessagePull& operator=(const MessagePull&) = delete;

  // Posts the receive of the reply and sends the request.
  void start();
  // Waits for the reply, running `meanwhile` between tests; then shard() and version() hold it.
  // RuntimeError after `timeout_seconds`.
  void finish(double timeout_seconds, const std::function<void()>& meanwhile);
  std::span<const float> shard() const;
  std::uint64_t version() const;
  std::size_t bytes() const { return floats_ * sizeof(float); }

 private:
  MPI_Comm comm_;
  int server_;
  std::size_t floats_;
  std::vector<std::uint8_t> reply_;  // version, then the shard
  MPI_Request request_ = MPI_REQUEST_NULL;
  MPI_Request reply_request_ = MPI_REQUEST_NULL;
  bool in_flight_ = false;
};

class MessageShardLink final : public ShardLink {
 public:
  // `comm` is the transport's communicator; `worker` the worker's index (rank - servers).
  MessageShardLink(MPI_Comm comm, const DownpourLayout& layout, int shard, int worker,
                   const config::ExperimentConfig& config);
  // An ack still awaited (error paths) is abandoned; the push is left to MPI (SendQueue).
  ~MessageShardLink() override;

  void advance(DownpourReport& report) override;
  void start_pull(DownpourReport& report) override;
  std::span<const float> finish_pull(DownpourReport& report, double timeout_seconds,
                                     const std::function<void()>& meanwhile) override;

 private:
  void send_push(const PushHeader& header, std::span<const std::uint8_t> payload) override;

  MPI_Comm comm_;
  SendQueue sends_;
  MPI_Request ack_request_ = MPI_REQUEST_NULL;
  std::vector<std::uint8_t> ack_;  // the ack word's bytes
  MessagePull pull_;
};

}  // namespace gradshare::train
