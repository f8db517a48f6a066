// downpour/rma_link.h: a worker's shard link over MPI one-sided RMA (window layout in
// downpour/protocol.h).
//
// Pushes: the worker Puts the payload and the push header (seq excepted) into its slot at the
// server, and at its next step (advance) flushes them and only then Puts the seq: a server that
// sees seq advance sees the whole push. The server Puts its ack word into the worker's window.
//
// Pulls: ShardReader reads the shard with MPI_Get under the server's seqlock:
//   start():  MPI_Get the seqlock word and flush; MPI_Get the shard, NOT flushed: the transfer
//             may run while the worker computes its next step
//   finish(): flush (the shard is complete here), MPI_Get the seqlock word again and flush.
//             The read is consistent when the word was even and has not changed; otherwise the
//             server wrote during the read and the buffer may mix two versions. The link then
//             reads again synchronously (start + finish back to back), so a pull completes at
//             the step after it was due even under heavy push traffic (pull_retries counts
//             these).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/mpi/window.h"
#include "config/experiment_config.h"
#include "train/downpour/link.h"
#include "train/downpour/protocol.h"

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

class RmaShardLink final : public ShardLink {
 public:
  // `window` is the job's Downpour window; `worker` the worker's index (rank - servers).
  RmaShardLink(comm::Window& window, const DownpourLayout& layout, int shard, int worker,
               const config::ExperimentConfig& config);

  void advance(DownpourReport& report) override;
  void start_pull(DownpourReport& report) override;
  std::span<const float> finish_pull(DownpourReport& report, double timeout_seconds,
                                     const std::function<void()>& meanwhile) override;

 private:
  void send_push(const PushHeader& header, std::span<const std::uint8_t> payload) override;
  std::uint64_t read_ack();

  comm::Window& window_;
  std::size_t slot_;
  ShardReader reader_;
  PushHeader header_;    // origin buffer of the push-header Puts
  bool staged_ = false;  // payload and header Put, seq not yet published
};

}  // namespace gradshare::train
