// downpour/checkpoint.h: Downpour's share of checkpoints and resuming.
//
// A checkpoint holds the servers' parameters (one version of every shard), the server
// optimizer's state with its shards concatenated as /optimizer (its step is shard 0's: the
// server optimizers, sgd and adagrad, do not depend on it), and every worker's own optimizer as
// /workers/<w>/optimizer. The master asks the other servers and the workers for their state
// (StateRequest / DownpourState: a server sends its whole shard, a ShardSnapshot) and writes the
// checkpoint from shard 0 and those snapshots once all have replied.
//
// Resuming: rank 0 reads the checkpoint and sends every other rank its StartState
// (Start) before the servers start: a server its shard's slice of the server optimizer
// state, a worker its own optimizer state (saved worker w mod saved workers when the number of
// workers changed). Every replica and shard starts from the checkpoint's parameters; shard
// versions (the staleness clock) restart at 0.
//
// Not in a periodic checkpoint: updates a worker has not pushed yet (its accumulator, a few
// n_push steps, and its encoder residual with downpour.encode). The partitions in flight are
// trained again after a resume anyway. A stop (signal) drains every worker first, so the
// checkpoint it writes holds everything.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "nn/model.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_snapshot.h"
#include "runtime/run_context.h"
#include "train/worker_state.h"

namespace gradshare::train {

struct DownpourStart {
  std::optional<ckpt::Checkpoint> resume;  // rank 0 only
  StartState own;                          // this rank's (rank 0: shard 0's server state)
};

// Collective over the job: rank 0 finds the checkpoint to resume from (Checkpointer) and sends
// every other rank its start; the others receive theirs. Every rank's `model` then holds the
// parameters to start from.
DownpourStart share_downpour_start(runtime::RunContext& context, comm::ControlChannel& control,
                                   const DownpourLayout& layout, nn::Model& model);

// Puts the shards' server optimizer states (index = shard, each of its shard's size) into the
// checkpoint as one state in the parameter layout.
void put_server_state(ckpt::Checkpoint& checkpoint, const std::vector<WorkerState>& shards,
                      const DownpourLayout& layout);

// Puts the servers' shards into the checkpoint: each snapshot's parameters (index = shard) into
// /parameters and its optimizer state as put_server_state does, so that every shard's
// parameters are from the same moment as its optimizer state.
void put_servers(ckpt::Checkpoint& checkpoint, const std::vector<const ShardSnapshot*>& shards,
                 const DownpourLayout& layout);

// Puts what the ranks answered a state request with into the checkpoint: the servers' shards
// (`own`: shard 0's snapshot; `replies`: the other servers' and the workers') as put_servers
// does, and every worker's optimizer. A worker gone in a shrink has no state: the optimizer of
// `stand_in`, a live worker, stands in for it (a resume gives every worker one).
void put_rank_states(ckpt::Checkpoint& checkpoint, const ShardSnapshot& own,
                     const std::map<int, DownpourState>& replies, const DownpourLayout& layout,
                     int stand_in);

// Shard `shard`'s slice of a Downpour checkpoint's server optimizer state (nothing for a
// checkpoint of another strategy, whose /optimizer is a worker's).
WorkerState server_shard_state(const ckpt::Checkpoint& checkpoint, const DownpourLayout& layout,
                               int shard);

}  // namespace gradshare::train
