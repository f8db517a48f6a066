// downpour/shard_rebuild.h: a lost parameter server's shard rebuilt inside the job, from the
// newest snapshot of it the master holds plus the pushes the workers kept since.
//
//  snapshots    at every checkpoint each server 1..K-1 answers the master's StateRequest with
//               its whole shard (ShardSnapshot: parameters, server optimizer state, version,
//               the seq applied from each worker), taken between two pushes, and the master
//               takes shard 0's. The master keeps the newest per shard (before the first: the
//               shard the run started from), under fault tolerance shard 0's also in the run
//               directory (shard_zero_file.h), and tells every worker the seq of its pushes each
//               snapshot holds (DownpourSnapshotTaken).
//  push logs    a worker keeps every push it posts to a shard 1..K-1, and under fault tolerance
//               to shard 0 (PushLog: header, payload and the age its ack reported) until a
//               snapshot holds it; each shard's log within fault_tolerance.keep_bytes / K, the
//               oldest dropped beyond it. A log half full asks the master for new snapshots
//               (DownpourSnapshotWanted), which it takes from the servers alone then, with no
//               checkpoint.
//  a lost server replaced (a spare, or spawned):
//     master -> replacement            DownpourShardRebuild {the newest snapshot}
//     each live worker -> replacement  DownpourPushLog {seq of its last push, its log}
//     the replacement replays every acknowledged push at the age its ack reported, in the order
//     the lost server applied them (each worker works out the version its push made from the
//     ack), then the pushes in flight, oldest base first, at their age now; it serves the result
//     and resyncs every worker as any server after a repair (DownpourResync).
//
// Every push the lost server applied, and those in flight, are applied once, and the rebuilt
// shard is the lost one bit for bit plus the pushes in flight (with either server optimizer).
// Where a repair lost an ack (a worker resynced without it), that push and the worker's later
// ones go with the pushes in flight, and the order may differ from the lost server's: with
// sgd only in float rounding, adagrad's accumulator more. A worker's log that lacks a push
// the snapshot does not hold (dropped beyond keep_bytes) makes the rebuild impossible: the job
// ends with a line that names the worker and says what to change (DownpourRebuildFailed: the
// master ends the job, and a rerun resumes from the newest checkpoint). Shard 0 lives
// with the master: a new master rebuilds it the same way from its file (downpour/takeover.h).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/byte_io.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_snapshot.h"
#include "train/messages.h"
#include "runtime/run_context.h"
#include "train/tags.h"
#include "train/worker_state.h"

namespace gradshare::train {

class DownpourNetwork;
class ShardServer;
class ShardUpdater;

// A push as its worker posted it, the age its ack reported and the shard version applying it
// made (none while in flight, or when a repair lost the ack).
struct LoggedPush {
  PushHeader header;
  std::vector<std::uint8_t> payload;
  std::optional<std::uint64_t> age;
  std::uint64_t version = 0;  // with an age only
};

// A worker's pushes to one shard that no snapshot holds yet, oldest first.
class PushLog {
 public:
  // `budget`: bytes of payload kept at most; beyond it the oldest pushes are dropped.
  explicit PushLog(std::size_t budget) : budget_(budget) {}
  void record(const PushHeader& header, std::span<const std::uint8_t> payload);
  // Push `seq`, of base version `base`, was acknowledged with `age`. The version applying it
  // made is worked out as the server counts ages: base + age + this worker's own pushes
  // applied since base, + 1.
  void acknowledged(std::uint64_t seq, std::uint64_t age, std::uint64_t base);
  // A snapshot holds the pushes up to `seq`.
  void held_through(std::uint64_t seq);
  // Seq of the newest push dropped for the budget (0: none).
  std::uint64_t dropped_through() const { return dropped_through_; }
  std::size_t bytes() const { return bytes_; }
  bool half_full() const { return bytes_ > budget_ / 2; }
  const std::deque<LoggedPush>& pushes() const { return pushes_; }

 private:
  std::size_t budget_;
  std::deque<LoggedPush> pushes_;
  std::size_t bytes_ = 0;
  std::uint64_t dropped_through_ = 0;
  std::deque<std::uint64_t> own_;  // versions this worker's acknowledged pushes made, past a base
  // Payload buffers of dropped pushes, reused: a dense push is large enough that allocating one
  // per push (fresh pages each time) cost the run time.
  std::vector<std::vector<std::uint8_t>> spare_;

  void drop_front();
};

// master -> a server's replacement: the shard's newest snapshot.
struct DownpourShardRebuild {
  static constexpr comm::Tag kTag = tags::kDownpourShardRebuild;
  ShardSnapshot snapshot;
  static auto fields(auto& self) { return std::tie(self.snapshot); }
};

// worker -> a server's replacement: its pushes to the shard that the snapshot may not hold.
//   {posted: u64, dropped_through: u64, count: u64, that many {seq, format, bytes, base: u64,
//    has_age: u8, age: u64, version: u64, payload: u8[]}}
struct DownpourPushLog {
  static constexpr comm::Tag kTag = tags::kDownpourPushLog;
  std::uint64_t posted = 0;           // seq of the worker's last push to the shard
  std::uint64_t dropped_through = 0;  // PushLog::dropped_through()
  std::vector<LoggedPush> pushes;
  void write(comm::ByteWriter& writer) const;
  static DownpourPushLog read(comm::ByteReader& reader);
};

// worker -> master: the pushes it keeps for a shard fill half their budget, so new snapshots
// are wanted before the checkpoint (the master asks the servers for them alone).
using DownpourSnapshotWanted = Signal<tags::kDownpourSnapshotWanted>;

// master -> each worker after new snapshots: per shard, the seq of this worker's pushes its
// snapshot holds.
struct DownpourSnapshotTaken {
  static constexpr comm::Tag kTag = tags::kDownpourSnapshotTaken;
  std::vector<std::uint64_t> held;
  static auto fields(auto& self) { return std::tie(self.held); }
};

// replacement -> master: the shard cannot be rebuilt, and why; the master ends the job with it
// (the replacement aborting by itself was seen not to end a job under ULFM).
struct DownpourRebuildFailed {
  static constexpr comm::Tag kTag = tags::kDownpourRebuildFailed;
  std::string why;
  static auto fields(auto& self) { return std::tie(self.why); }
};

// What a replay did.
struct ReplayCount {
  std::size_t acknowledged = 0;  // replayed at the age their ack reported
  std::size_t in_flight = 0;     // applied at their age now
};

// Restores `updater` to `snapshot` and applies to `parameters` (the snapshot's) every logged
// push it does not hold; `logs` by worker index. Throws JobCannotGoOn when a log lacks a push
// the snapshot does not hold, RuntimeError for a malformed one.
ReplayCount replay_pushes(ShardUpdater& updater, const ShardSnapshot& snapshot,
                          const std::map<int, DownpourPushLog>& logs, std::span<float> parameters);

// A replacement for lost server `context.rank`, on the network its repair made: the master's
// snapshot, every live worker's log, the replay, and the server that serves the result.
std::unique_ptr<ShardServer> rebuild_lost_shard(runtime::RunContext& context,
                                                DownpourNetwork& network);
// The same from `snapshot` (a new master's shard 0: downpour/takeover.h); `kept`, by worker
// index, stands for what that worker's replacement sends (a former worker's own log).
std::unique_ptr<ShardServer> rebuild_shard(runtime::RunContext& context, DownpourNetwork& network,
                                           const ShardSnapshot& snapshot,
                                           const std::map<int, DownpourPushLog>& kept = {});

}  // namespace gradshare::train
