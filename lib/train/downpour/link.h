// downpour/link.h: a worker's side of one parameter-server shard, whatever transport carries it
// (downpour/transport.h): the push protocol both transports share.
//
// Pushes: at most one per shard is in flight. The worker posts a push only when the server has
// acknowledged the previous one (push_outstanding() is false), otherwise it keeps accumulating
// (it never waits). Push k carries seq k, its format, its payload bytes and its base version
// (the shard version of the worker's last pull); with downpour.encode the payload is one
// threshold-codec message and the encoder keeps what it does not send as its residual. The
// server answers with the ack word (downpour/protocol.h), which must acknowledge the pushes in
// order.
//
// Pulls are asynchronous: start_pull() at one step, finish_pull() at the next, so the transfer
// overlaps the step between. The shard returned is one version of the server's, and that
// version becomes the base of later pushes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "codec/encoder.h"
#include "config/experiment_config.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_rebuild.h"

namespace gradshare::train {

class ShardLink {
 public:
  virtual ~ShardLink() = default;
  ShardLink(const ShardLink&) = delete;
  ShardLink& operator=(const ShardLink&) = delete;

  const ShardRange& range() const { return range_; }

  // Completes what the previous step left in flight and records newly acknowledged pushes.
  virtual void advance(DownpourReport& report) = 0;
  // A push was posted and the server has not acknowledged it yet.
  bool push_outstanding() const { return acked_ < posted_; }
  // Seq of the last push posted (a replacement's count goes on from its predecessor's).
  std::uint64_t posted() const { return posted_; }
  // Posts `delta` (this shard's accumulated updates) as the next push, encoded when
  // downpour.encode (the encoder keeps what it does not send, its sparsity warm-up at
  // `epochs` of training); zeroes `delta`. Requires !push_outstanding().
  void push(std::span<float> delta, std::uint64_t iteration, double epochs, DownpourReport& report);
  // Posts `delta` plus the encoder's residual as a dense push and zeroes both: after it, every
  // update this worker made is on its way to the server. Requires !push_outstanding().
  void push_all(std::span<float> delta, DownpourReport& report);

  virtual void start_pull(DownpourReport& report) = 0;
  // Completes the pull started at the previous step; returns the shard, one version of the
  // server's, which becomes the base version of later pushes. `meanwhile` runs while it waits
  // (the worker answers the master and sees a process failure there). RuntimeError after
  // `timeout_seconds`.
  virtual std::span<const float> finish_pull(DownpourReport& report, double timeout_seconds,
                                             const std::function<void()>& meanwhile) = 0;
  // What this worker has not yet sent of the shard (the encoder's residual; empty without
  // encoding).
  std::span<const float> residual() const;

  // After a repair (downpour/network.h): this link, made on the new transport, continues
  // `old`'s pushes: their seq, the push in flight, the encoder's residual, the base version.
  void take_over(ShardLink& old);
  // Keeps the pushes to this shard from here on (within fault_tolerance.keep_bytes /
  // downpour.servers) until a snapshot holds them: every shard 1..K-1's from the start, shard
  // 0's (the master's) under fault tolerance, for a new master (downpour/takeover.h).
  void keep_pushes(const config::ExperimentConfig& config, const DownpourLayout& layout);
  // The pushes to this shard no snapshot of it holds yet (shard_rebuild.h), for a replacement
  // that rebuilds the shard; and the master's word that a snapshot holds those up to `seq`.
  DownpourPushLog push_log() const;
  void snapshot_holds(std::uint64_t seq);
  // The pushes kept fill half their budget: new snapshots are wanted.
  bool log_half_full() const { return log_ && log_->half_full(); }

  // Then the server's word: `applied` is the seq of the last push it applied from this worker.
  // The push in flight it did not apply is sent again (it was lost with the old transport); a
  // replacement, which has posted nothing, continues the seq of the worker it replaces.
  // RuntimeError when the two disagree otherwise.
  void resync(std::uint64_t applied);

 protected:
  // `worker` is the worker's index (rank - servers).
  ShardLink(const DownpourLayout& layout, int shard, int worker,
            const config::ExperimentConfig& config);

  // Sends the push `header` describes (its seq is the previous push's + 1). `payload` stays
  // untouched until the push is acknowledged.
  virtual void send_push(const PushHeader& header, std::span<const std::uint8_t> payload) = 0;
  // Takes the server's ack word; RuntimeError unless it acknowledges the next push posted.
  void acknowledge(std::uint64_t word, DownpourReport& report);
  std::uint64_t acked() const { return acked_; }
  void set_base_version(std::uint64_t version) { base_version_ = version; }
  int server() const { return server_; }
  int rank() const { return rank_; }

 private:
  void post(PushFormat format, DownpourReport& report);

  int server_;
  int rank_;
  ShardRange range_;
  std::size_t payload_capacity_;
  std::unique_ptr<codec::Encoder> encoder_;  // null without downpour.encode
  std::unique_ptr<PushLog> log_;             // null: pushes not kept (keep_pushes)
  std::vector<std::uint8_t> payload_;        // the push in flight
  PushHeader header_;                        // its header
  std::uint64_t base_version_ = 0;
  std::uint64_t posted_ = 0;
  std::uint64_t acked_ = 0;
};

}  // namespace gradshare::train
