// downpour/shard_snapshots.h: what the Downpour master keeps to rebuild a lost parameter server
// (downpour/shard_rebuild.h): the newest snapshot of every shard 1..K-1, the workers told what
// each holds, and a lost server's replacement sent its shard's.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_snapshot.h"

namespace gradshare::train {

class ShardSnapshots {
 public:
  // Before any checkpoint: the shards as the run starts, `parameters` (the whole model) and the
  // resumed checkpoint's server optimizer state.
  ShardSnapshots(const DownpourLayout& layout, std::span<const float> parameters,
                 const std::optional<ckpt::Checkpoint>& resume);

  // The servers' replies to a state request (a checkpoint's, or one for snapshots alone): keeps
  // their snapshots and tells each of `workers` which of its pushes they hold. RuntimeError
  // when a server sent none.
  void keep(const std::map<int, DownpourState>& replies, comm::ControlChannel& control,
            const std::vector<int>& workers);
  // After a repair: each server among `replaced` gets its shard's snapshot; returns them.
  std::vector<int> send_to_replacements(const std::vector<int>& replaced,
                                        comm::ControlChannel& control) const;

 private:
  const DownpourLayout& layout_;
  std::vector<ShardSnapshot> shards_;  // index: shard (0 unused: it lives with the master)
};

}  // namespace gradshare::train
