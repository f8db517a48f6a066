// downpour/protocol.h: what Downpour's servers, workers and master share whatever carries the
// pushes and pulls (downpour/transport.h): who serves which shard, the push header, the ack
// word, the layout of the RMA window, the figures workers report, and stopping.
//
// Ranks 0..K-1 are parameter servers (K = downpour.servers) and rank 0 is also the master;
// ranks K..size-1 are workers. The flat parameter vector is cut into K contiguous shards
// (shard_range); server s holds shard s.
//
// A push is a PushHeader (seq, format, payload bytes, base version) and a payload: m floats
// (dense) or one threshold-codec message (encoded). The server answers each push it applies
// with the ack word: (age of the push in server versions << 32) | seq of the push.
//
// With the RMA transport, the window of server s, every region 64-byte aligned:
//
//   [0, 64)   seqlock word: 2 * (pushes applied to the shard), +1 while the server writes the
//             shard, so the shard's version (the staleness clock) is seqlock / 2
//   params    the shard's parameters, m floats; workers read them with one-sided gets
//   slot w    one per worker (w = worker rank - K), written by that worker only:
//               the push header (64 bytes, seq written last), then the payload
//
// Window of a worker: one 64-byte line per server, whose first word only that server writes:
// its ack word. (The two-sided transport sends the same header and ack word as messages.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "comm/job.h"
#include "config/experiment_config.h"
#include "train/downpour/shard_snapshot.h"
#include "train/messages.h"
#include "train/step_counts.h"
#include "train/partition_messages.h"
#include "runtime/partition_scheduler.h"
#include "train/worker_state.h"

namespace gradshare::train {

inline constexpr std::size_t kLineBytes = 64;

inline std::size_t align_line(std::size_t bytes) {
  return (bytes + kLineBytes - 1) / kLineBytes * kLineBytes;
}

// Contiguous shard [begin, end) of the flat parameter vector; shard sizes differ by at most one.
struct ShardRange {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};
ShardRange shard_range(std::size_t parameters, int servers, int shard);

enum class PushFormat : std::uint64_t { kDense = 1, kEncoded = 2 };

// The head of every push: the first 64 bytes of an RMA push slot (the worker Puts format, bytes
// and base with the payload, flushes, and only then Puts seq: a server that sees seq advance
// sees the whole push), the first bytes of a push message.
struct PushHeader {
  std::uint64_t seq = 0;     // the worker's push number for this shard, 1, 2, ...
  std::uint64_t format = 0;  // PushFormat
  std::uint64_t bytes = 0;   // payload bytes
  std::uint64_t base = 0;    // shard version the pushing worker's parameters were pulled at
};
static_assert(sizeof(PushHeader) <= kLineBytes);

// The codec settings of an encoded push (downpour.encode): encoding.* with its sparsity band
// widened n_push times, since a push carries n_push steps of updates.
config::EncodingConfig push_encoding(const config::ExperimentConfig& config);

// Offsets in a server's window for a shard of `floats` parameters.
class ShardLayout {
 public:
  // payload_capacity: the largest push (dense floats, or the largest codec message).
  ShardLayout(std::size_t floats, int workers, std::size_t payload_capacity);
  std::size_t floats() const { return floats_; }
  std::size_t payload_capacity() const { return payload_capacity_; }
  static constexpr std::size_t seqlock_offset() { return 0; }
  static constexpr std::size_t parameters_offset() { return kLineBytes; }
  std::size_t slot_offset(int worker) const;
  std::size_t payload_offset(int worker) const { return slot_offset(worker) + kLineBytes; }
  std::size_t window_bytes() const;

 private:
  std::size_t floats_;
  int workers_;
  std::size_t payload_capacity_;
};

// Every rank's view of the job: the same on all ranks (built from the config and the sizes).
class DownpourLayout {
 public:
  DownpourLayout(const config::ExperimentConfig& config, std::size_t parameters, int ranks);
  int servers() const { return servers_; }
  int workers() const { return ranks_ - servers_; }
  bool is_server(int rank) const { return rank < servers_; }
  int worker_rank(int index) const { return servers_ + index; }
  int worker_index(int rank) const { return rank - servers_; }
  std::size_t parameters() const { return parameters_; }
  const ShardRange& shard(int s) const { return shards_[static_cast<std::size_t>(s)]; }
  const ShardLayout& shard_layout(int s) const { return layouts_[static_cast<std::size_t>(s)]; }
  // Where server s's ack word lies in every worker's window.
  static std::size_t ack_offset(int server) {
    return static_cast<std::size_t>(server) * kLineBytes;
  }
  // Bytes of `rank`'s window.
  std::size_t window_bytes(int rank) const;

 private:
  int servers_;
  int ranks_;
  std::size_t parameters_;
  std::vector<ShardRange> shards_;
  std::vector<ShardLayout> layouts_;
};

// downpour.combine as it applies: auto is sqrt under an adaptive optimizer (adam, adamw,
// rmsprop, adagrad), sum under sgd, momentum and nesterov. The scaling rules (Malladi et al.,
// "On the SDEs and scaling rules for adaptive gradient algorithms", 2022): W workers' steps on W
// batches count as one step on a W-times larger batch, at W times SGD's learning rate but sqrt(W)
// times Adam's, whose step does not grow with the gradient.
std::string push_combine(const config::ExperimentConfig& config);

// How much of a push a server applies, times server_learning_rate. push_combine sets the
// most: sum all of it, sqrt 1 / sqrt(workers), mean 1 / workers. Under stale_pushes: scale a
// push `age` versions old (other workers' pushes applied since its worker pulled) counts at most
// 1 / age, never below 1 / workers (staleness-aware SGD, Zhang et al. 2016, bounded by what
// mean gives); under full, or with mean, every push counts the most.
class PushWeight {
 public:
  PushWeight(const config::ExperimentConfig& config, int workers);
  double operator()(std::uint64_t age) const;
  bool by_age() const { return by_age_ && most_ > least_; }

 private:
  double most_, least_;
  bool by_age_;
};

// The config a worker steps with: under downpour.momentum: compensate, its momentum lowered by
// the implicit momentum of `workers` asynchronous workers (with_compensated_momentum); pushes
// summed, the gradient clipped as one of `workers` (one_of_summed_workers).
config::ExperimentConfig worker_optimizer_config(const config::ExperimentConfig& config,
                                                 int workers);
// The line that says so, empty when nothing is lowered.
std::string worker_momentum_line(const config::ExperimentConfig& config, int workers);
// The master's line about the servers, the workers and how they push and pull.
std::string downpour_setup_line(const config::ExperimentConfig& config,
                                const DownpourLayout& layout);

// The ack word: ages saturate at 2^32 - 1; seq must stay below 2^32.
std::uint64_t pack_ack(std::uint64_t seq, std::uint64_t age);
inline std::uint64_t ack_seq(std::uint64_t word) { return word & 0xFFFFFFFFull; }
inline std::uint64_t ack_age(std::uint64_t word) { return word >> 32; }

// A worker's figures since its previous report (DownpourReport, DownpourDone), summed by the
// master.
struct DownpourReport : StepCounts {
  std::int64_t pushes = 0;  // shard pushes posted
  std::int64_t push_bytes = 0;
  std::int64_t pulls = 0;         // consistent shard pulls installed
  std::int64_t pull_bytes = 0;    // retries included
  std::int64_t pull_retries = 0;  // RMA: pulls discarded because the server wrote during the read
  std::int64_t busy_slots = 0;    // pushes postponed: the previous one unapplied, or a pull due
  std::int64_t ages = 0;          // acknowledged pushes
  double age_sum = 0;             // their staleness, in server versions
  std::int64_t age_max = 0;
  double seconds = 0;  // the worker's wall time these figures cover

  void add(const DownpourReport& other);
  static constexpr comm::Tag kTag = tags::kDownpourReport;
};

// Control messages (train/messages.h for the shared ones):
//  rank -> master        DownpourState at the master's StateRequest: a worker's optimizer state,
//                        or a server's whole shard (its optimizer state in it)
//  worker -> master      DownpourReport every logging.every_steps steps; DownpourDone after its
//                        last push; DownpourFinalModel after the final pull
//  master -> workers     DownpourFinalPull once every worker's last push is applied
//  master -> servers     PeakMemoryRequest at the end (DownpourServerEnd back)
struct DownpourState {
  static constexpr comm::Tag kTag = tags::kDownpourState;
  WorkerState state;                   // a worker's (a server's: empty)
  std::optional<ShardSnapshot> shard;  // a server 1..K-1's whole shard (shard_rebuild.h)
  //   {state, has_shard: u8, shard snapshot if it has one}
  void write(comm::ByteWriter& writer) const;
  static DownpourState read(comm::ByteReader& reader);
};

struct DownpourDone {
  static constexpr comm::Tag kTag = tags::kDownpourDone;
  DownpourReport report;  // since its previous one
  std::int64_t peak_bytes = 0;
  static auto fields(auto& self) { return std::tie(self.report, self.peak_bytes); }
};

using DownpourFinalPull = Signal<tags::kDownpourFinalPull>;

// A worker's parameters after the final pull: every worker's must equal the servers'. With
// them the seq of its last push to each shard: each server must have applied exactly that many
// from the worker's slot (a replacement continues its predecessor's seqs), none lost, none
// twice.
struct DownpourFinalModel {
  static constexpr comm::Tag kTag = tags::kDownpourFinalModel;
  std::vector<float> parameters;
  std::vector<std::uint64_t> pushed;  // per shard
  static auto fields(auto& self) { return std::tie(self.parameters, self.pushed); }
};

// A server 1..K-1 at the master's PeakMemoryRequest (the end): its peak memory and the seq of
// the last push it applied from each worker.
struct DownpourServerEnd {
  static constexpr comm::Tag kTag = tags::kDownpourServerEnd;
  std::int64_t peak_bytes = 0;
  std::vector<std::uint64_t> applied;  // per worker index
  static auto fields(auto& self) { return std::tie(self.peak_bytes, self.applied); }
};

// Recovery (downpour/network.h), after every repair:
//  each server -> each live worker  DownpourResync: the seq of the last push it applied from
//                                   that worker (a replacement continues from it)
//  master -> each live worker       DownpourResume: what the master has from that worker
struct DownpourResync {
  static constexpr comm::Tag kTag = tags::kDownpourResync;
  std::uint64_t applied = 0;  // seq of the worker's last push the shard applied
  static auto fields(auto& self) { return std::tie(self.applied); }
};

//   {has_done: u8, has_final_model: u8, partitions done: grants}
struct DownpourResume {
  static constexpr comm::Tag kTag = tags::kDownpourResume;
  bool has_done = false;         // the worker's DownpourDone
  bool has_final_model = false;  // its DownpourFinalModel
  // To a replacement: every partition done so far, which it tells a new master in turn
  // (downpour/takeover.h); empty to the others, which know theirs.
  std::vector<runtime::PartitionGrant> done;
  static auto fields(auto& self) {
    return std::tie(self.has_done, self.has_final_model, self.done);
  }
};

// worker -> a new master (downpour/takeover.h): every partition it knows done.
struct DownpourTakeoverStatus {
  static constexpr comm::Tag kTag = tags::kDownpourTakeoverStatus;
  std::vector<runtime::PartitionGrant> done;
  static auto fields(auto& self) { return std::tie(self.done); }
};

// Stopping (SIGTERM or SIGUSR1 on any rank): a rank other than the master that gets the signal
// tells the master once (Shutdown {75}); the master stops handing out partitions, the workers
// drain as at the end of training, and the master checkpoints and ends every rank with
// Shutdown {exit code}.
class StopNotice {
 public:
  // `sent`: whether this rank has told the master (the caller keeps it: a repair replaces the
  // channel, not what was said).
  StopNotice(comm::ControlChannel& control, const comm::Job& job, bool& sent)
      : control_(control), job_(job), sent_(sent) {}
  // Tells the master, once, that a stop signal has arrived here.
  void check();

 private:
  comm::ControlChannel& control_;
  const comm::Job& job_;
  bool& sent_;
};

}  // namespace gradshare::train
