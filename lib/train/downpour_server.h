// downpour_server.h: one parameter-server shard living in this rank's window (layout in
// downpour_protocol.h). It polls the workers' push slots, applies each push with the server
// optimizer (downpour.server_optimizer) in the order it finds them (round-robin from the slot
// after the last one applied, so no worker is starved), advances the shard's version under the
// seqlock and acknowledges the push in the pushing worker's window.
//
// A worker that dies mid-push leaves a slot whose seq never advanced: the server never reads
// that half-written payload. Pushes are validated (seq order, format, size, codec checks,
// finite values, base version) and a bad one is a RuntimeError naming the worker.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/control_plane.h"
#include "comm/window.h"
#include "config/experiment_config.h"
#include "nn/optimizer.h"
#include "train/downpour_protocol.h"
#include "train/run_context.h"

namespace gradshare::train {

class ShardServer {
 public:
  // Writes `initial` (the shard's slice of the seeded model) into the window. `window` is this
  // rank's Downpour window and must outlive the server.
  ShardServer(comm::Window& window, const DownpourLayout& layout, int shard,
              const config::ExperimentConfig& config, std::span<const float> initial);

  // Applies every push that has been posted since the last poll; returns how many.
  std::size_t poll();

  // The shard as it is now (window memory; only this rank writes it).
  std::span<const float> parameters() const;
  // Pushes applied so far: the shard's version, the clock staleness is measured in.
  std::uint64_t version() const { return seqlock_ / 2; }
  int shard() const { return shard_; }
  // The server optimizer (shard-sized state): checkpoints save it, a resume restores it.
  nn::Optimizer& optimizer() { return *optimizer_; }

 private:
  bool apply_if_posted(int worker);
  [[noreturn]] void bad_push(int worker, const std::string& detail) const;
  std::span<float> shard_memory() const;
  void store_seqlock(std::uint64_t value);

  comm::Window& window_;
  const DownpourLayout& layout_;
  int shard_;
  ShardLayout shard_layout_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  double learning_rate_;
  std::vector<std::uint64_t> applied_;     // per worker: seq of its last push applied
  std::vector<std::uint64_t> ack_values_;  // origin buffers of the ack Puts
  std::vector<float> delta_;
  std::vector<float> update_;
  int next_worker_ = 0;
  std::uint64_t seqlock_ = 0;
};

// Ranks 1..K-1: serve their shard and answer the master's state requests until its kShutdown,
// whose exit code they return; a stop signal here is passed on to the master.
int run_downpour_server(RunContext& context, comm::ControlPlane& control, ShardServer& server);

}  // namespace gradshare::train
