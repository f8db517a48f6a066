// downpour/server.h: a parameter-server shard, whatever transport carries its pushes and pulls
// (downpour/transport.h), and the loop of the server ranks 1..K-1.
//
// ShardUpdater is what every shard does with a push: it validates it (seq order, format, size,
// codec checks, finite values, base version; a bad push is a RuntimeError naming the worker and
// leaves the shard as it was), computes the update with the server optimizer
// (downpour.server_optimizer, at lr times the push's weight: PushWeight in downpour/protocol.h;
// the age: the other workers' pushes applied since its base)
// and counts the
// shard's version, the clock staleness is measured in.
//
// ShardServer is the transport's server: poll() takes the pushes that have arrived in the
// order it finds them, round-robin from the worker after the last one applied (no worker is
// starved), acknowledges each with the ack word, and answers the pulls that need an answer.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "config/experiment_config.h"
#include "nn/optimizer.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_rebuild.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class ShardUpdater {
 public:
  ShardUpdater(const DownpourLayout& layout, int shard, const config::ExperimentConfig& config);

  int shard() const { return shard_; }
  // Pushes applied so far.
  std::uint64_t version() const { return version_; }
  // Seq of the last push applied from `worker` (its index, rank - servers), and per worker.
  std::uint64_t applied_seq(int worker) const;
  const std::vector<std::uint64_t>& applied_seqs() const { return applied_; }
  // Validates `worker`'s push (`payload`: the bytes that came with the header) and computes the
  // update it makes to `parameters`, which it leaves as they are (a bad push changes nothing);
  // returns the push's ack word. `age`: a replayed push's (shard_rebuild.h), instead of the one
  // its base gives.
  std::uint64_t prepare(int worker, const PushHeader& header, std::span<const std::uint8_t> payload,
                        std::span<const float> parameters,
                        std::optional<std::uint64_t> age = std::nullopt);
  // Applies the update prepare() computed: version + 1.
  void apply(std::span<float> parameters);
  // A bad push from `worker`: RuntimeError naming the server and the worker.
  [[noreturn]] void reject(int worker, const std::string& detail) const;
  // After a repair: continues `old`'s shard (its optimizer, version and the seq applied from
  // each worker) on a new transport.
  void take_over(ShardUpdater& old);
  // The shard's state with `parameters` (its own) as it is now, and back (a rebuild).
  ShardSnapshot snapshot(std::span<const float> parameters) const;
  void restore(const ShardSnapshot& snapshot);
  const DownpourLayout& layout() const { return layout_; }

  // The server optimizer (shard-sized state): checkpoints save it, a resume restores it.
  nn::Optimizer& optimizer() { return *optimizer_; }

 private:
  const DownpourLayout& layout_;
  int shard_;
  std::size_t payload_capacity_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  double learning_rate_;
  PushWeight weight_;
  std::vector<std::uint64_t> applied_;  // per worker: seq of its last push applied
  // Per worker: the first shard version that held each of its pushes applied, oldest first
  // (those past the base of its latest push only).
  std::vector<std::deque<std::uint64_t>> own_versions_;
  std::vector<float> delta_;
  std::vector<float> update_;
  std::uint64_t version_ = 0;
  int prepared_worker_ = -1;  // whose push prepare() accepted, until apply()
  std::uint64_t prepared_seq_ = 0;
};

class ShardServer {
 public:
  virtual ~ShardServer() = default;
  ShardServer(const ShardServer&) = delete;
  ShardServer& operator=(const ShardServer&) = delete;

  // Applies every push that has arrived since the last poll and answers the pull requests
  // waiting; returns how many of both.
  virtual std::size_t poll() = 0;
  // The shard as it is now (only this rank writes it).
  virtual std::span<const float> parameters() const = 0;

  // Pushes applied so far: the shard's version.
  std::uint64_t version() const { return updater_.version(); }
  int shard() const { return updater_.shard(); }
  nn::Optimizer& optimizer() { return updater_.optimizer(); }
  // Seq of the last push applied from `worker` (what a worker resyncs from after a repair), and
  // that of every worker.
  std::uint64_t applied_seq(int worker) const { return updater_.applied_seq(worker); }
  const std::vector<std::uint64_t>& applied_seqs() const { return updater_.applied_seqs(); }
  // After a repair: this server, made on the new transport with `old`'s parameters, takes over
  // the rest of `old`'s state (downpour/network.h).
  void take_over(ShardServer& old);
  // A rebuilt shard (shard_rebuild.h): this server, made with its parameters, takes the rest.
  void adopt(ShardUpdater& rebuilt);
  // Its whole state now, for the master to rebuild it from (shard_rebuild.h).
  ShardSnapshot snapshot() const { return updater_.snapshot(parameters()); }

 protected:
  ShardServer(const DownpourLayout& layout, int shard, const config::ExperimentConfig& config);

  // Gives every worker one turn, starting after the last one whose push applied; `try_apply`
  // applies the worker's push if one has arrived. Returns how many applied.
  std::size_t round_robin(const std::function<bool(int worker)>& try_apply);
  // take_over() changed the version and the seq applied from each worker outside a push: what
  // the transport shows the workers must follow.
  virtual void publish_carried_state() = 0;

  const DownpourLayout& layout_;
  ShardUpdater updater_;

 private:
  int next_worker_ = 0;
};

// Ranks 1..K-1: serve their shard and answer the master's state requests (with the shard's
// snapshot) until its Shutdown, whose exit code they return; a stop signal here is passed on to
// the master. After a process failure `network` is repaired and the shard goes on on its new
// transport. A null `server`: this rank replaces a lost server and rebuilds its shard first
// (shard_rebuild.h).
class DownpourNetwork;  // downpour/network.h
int run_downpour_server(runtime::RunContext& context, DownpourNetwork& network,
                        std::unique_ptr<ShardServer> server);

}  // namespace gradshare::train
