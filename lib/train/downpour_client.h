// downpour_client.h: the reading and pushing side of a parameter-server shard.
//
// ShardReader reads a shard with MPI_Get under the server's seqlock (downpour_protocol.h):
//   start():  MPI_Get the seqlock word and flush; MPI_Get the shard, NOT flushed: the transfer
//             may run while the worker computes its next step
//   finish(): flush (the shard is complete here), MPI_Get the seqlock word again and flush.
//             The read is consistent when the word was even and has not changed; otherwise the
//             server wrote during the read and the buffer may mix two versions. The caller then
//             reads again synchronously (start + finish back to back), so a pull completes at the
//             step after it was due even under heavy push traffic.
//
// ShardClient is a worker's side of one shard: its push slot at the server, its ack word and
// its reader. At most one push per shard is in flight: a push is posted only after the server
// acknowledged the previous one, otherwise the worker keeps accumulating (never waits). A push
// is completed at the worker's next step: flush the payload, then MPI_Put the seq.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codec/encoder.h"
#include "comm/window.h"
#include "config/experiment_config.h"
#include "train/downpour_protocol.h"

namespace gradshare::train {

class ShardReader {
 public:
  ShardReader(comm::Window& window, int server, std::size_t floats);

  // Posts the read; returns false (nothing posted) while the server is writing the shard.
  bool start();
  // Completes a posted read; true when it is consistent (then shard() and version() hold it).
  bool finish();
  bool in_flight() const { return in_flight_; }
  std::span<const float> shard() const { return buffer_; }
  std::uint64_t version() const { return seqlock_ / 2; }
  std::size_t bytes() const { return buffer_.size() * sizeof(float); }

 private:
  std::uint64_t read_seqlock();

  comm::Window& window_;
  int server_;
  std::vector<float> buffer_;
  std::uint64_t seqlock_ = 0;  // the word read by start()
  std::uint64_t word_ = 0;     // origin buffer of the seqlock Gets
  bool in_flight_ = false;
};

// Reads a consistent shard of `server` into `out` (retrying with back-off while the server
// writes); returns its version. RuntimeError after `timeout_seconds`.
std::uint64_t read_shard(comm::Window& window, int server, std::span<float> out,
                         double timeout_seconds);

class ShardClient {
 public:
  // `worker` is the worker's index (rank - servers).
  ShardClient(comm::Window& window, const DownpourLayout& layout, int shard, int worker,
              const config::ExperimentConfig& config);

  const ShardRange& range() const { return range_; }

  // Completes the push posted at the previous step and records newly acknowledged pushes.
  void advance(DownpourReport& report);
  // True when no push is in flight and the server has applied the last one.
  bool slot_free();
  // Posts `delta` (this shard's accumulated updates) as the next push, encoded when
  // downpour.encode (the encoder keeps what it does not send); zeroes `delta`.
  void push(std::span<float> delta, std::uint64_t iteration, DownpourReport& report);
  // Posts `delta` plus the encoder's residual as a dense push and zeroes both: after it, every
  // update this worker made is on its way to the server. Requires slot_free().
  void push_all(std::span<float> delta, DownpourReport& report);
  // Pushes posted whose seq is not yet acknowledged (0 when all were applied).
  bool push_outstanding() const { return staged_ || acked_ < posted_; }

  bool pull_in_flight() const { return reader_.in_flight(); }
  void start_pull(DownpourReport& report);
  // Completes the pull started at the previous step (re-reading synchronously when the server
  // wrote during it); returns the consistent shard, whose version becomes the base version of
  // later pushes.
  std::span<const float> finish_pull(DownpourReport& report, double timeout_seconds);
  // What this worker has not yet sent of the shard (the encoder's residual; empty without
  // encoding).
  std::span<const float> residual() const;

 private:
  void post(PushFormat format, std::span<const std::uint8_t> payload);
  std::uint64_t read_ack();

  comm::Window& window_;
  int server_;
  int rank_;
  ShardRange range_;
  ShardLayout layout_;
  std::size_t slot_;
  std::unique_ptr<codec::Encoder> encoder_;  // null without downpour.encode
  ShardReader reader_;
  std::vector<std::uint8_t> payload_;  // origin buffer of the payload Put
  SlotHeader header_;                  // origin buffer of the slot-header Puts
  std::uint64_t base_version_ = 0;
  std::uint64_t posted_ = 0;  // pushes whose seq was published
  std::uint64_t acked_ = 0;
  bool staged_ = false;  // payload Put, seq not yet published
};

}  // namespace gradshare::train
