// downpour/shard_snapshots.h: what the Downpour master keeps to rebuild a lost parameter server
// (downpour/shard_rebuild.h): the newest snapshot of every shard, the workers told what each
// holds, and a lost server's replacement sent its shard's. Shard 0 lives with the master: under
// fault tolerance its snapshot also goes to the run directory (shard_zero_file.h), from which a
// new master rebuilds it (downpour/takeover.h).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "train/downpour/protocol.h"
#include "train/downpour/shard_snapshot.h"

namespace gradshare::train {

class ShardSnapshots {
 public:
  // Before any checkpoint: the shards as the run starts, `parameters` (the whole model) and the
  // resumed checkpoint's server optimizer state. `shard_zero_file`: where shard 0's snapshots
  // are written (the start's at once); empty: nowhere (a job without fault tolerance).
  ShardSnapshots(const DownpourLayout& layout, std::span<const float> parameters,
                 const std::optional<ckpt::Checkpoint>& resume, std::string shard_zero_file);
  // A new master's (downpour/takeover.h): shard 0 as it rebuilt it (written at once), no other
  // shard's until the first keep(): a server lost before then cannot be rebuilt.
  ShardSnapshots(const DownpourLayout& layout, const ShardSnapshot& shard_zero,
                 std::string shard_zero_file);

  // Whether shard 0's snapshots are kept (a file was given).
  bool keeps_shard_zero() const { return !shard_zero_file_.empty(); }
  // The servers' replies to a state request (a checkpoint's, or one for snapshots alone) and
  // shard 0's snapshot, taken by the master meanwhile (when kept): keeps them (shard 0's in its
  // file) and tells each of `workers` which of its pushes they hold. RuntimeError when a server
  // sent none.
  void keep(const std::map<int, DownpourState>& replies,
            const std::optional<ShardSnapshot>& shard_zero, comm::ControlChannel& control,
            const std::vector<int>& workers);
  // After a repair: each server among `replaced` (shard 0's, the master's own, left out) gets its
  // shard's snapshot; returns them. JobCannotGoOn when one is not known.
  std::vector<int> send_to_replacements(const std::vector<int>& replaced,
                                        comm::ControlChannel& control) const;
  // At the end of the run: shard 0's file goes.
  void remove_shard_zero_file() const;

 private:
  const DownpourLayout& layout_;
  std::vector<std::optional<ShardSnapshot>> shards_;  // index: shard
  std::string shard_zero_file_;
};

}  // namespace gradshare::train
