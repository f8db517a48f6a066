// downpour/message_wire.h: the messages of Downpour's two-sided transport, on a communicator of
// its own (a duplicate of the job's, so nothing else can match them). Every message is MPI_BYTE.
//
//   worker -> server s   kPush         PushHeader, then header.bytes of payload
//   server s -> worker   kAck          the ack word of that push (8 bytes)
//   any rank -> server   kPullRequest  empty
//   server -> requester  kPullReply    the shard's version (8 bytes), then its floats, copied
//                                      between two pushes: one version by construction
//
// A worker has at most one push and one pull per shard in flight, and receives the ack and the
// pull reply into receives it posted before sending, so those land without an extra copy.
// Nothing waits for a peer to progress: the server receives pushes with MPI_Imrecv (a large
// message moves as the worker's MPI calls progress it) and sends with MPI_Isend.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace gradshare::train {

// The tags, on the transport's communicator.
struct DownpourTag {
  static constexpr int kPush = 1, kAck = 2, kPullRequest = 3, kPullReply = 4;
};

// The bytes of a pull reply before the shard's floats.
inline constexpr std::size_t kPullReplyHeaderBytes = sizeof(std::uint64_t);

// Sends in flight and the buffers MPI reads until each completes.
class SendQueue {
 public:
  explicit SendQueue(MPI_Comm comm) : comm_(comm) {}
  // What has not completed is left to MPI to finish (comm::abandon_send): every message this
  // transport sends is one its receiver waits for, so it will be matched.
  ~SendQueue();
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // MPI_Isend of `bytes` (kept until the send completes).
  void send(int dest, int tag, std::vector<std::uint8_t> bytes);
  // Completes the sends MPI has finished.
  void complete();

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::uint8_t> bytes;
  };
  MPI_Comm comm_;
  std::deque<Pending> pending_;
};

}  // namespace gradshare::train
