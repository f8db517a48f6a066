// downpour/shard_snapshots.cpp: ShardSnapshots (see shard_snapshots.h).
#include "train/downpour/shard_snapshots.h"

#include <string>

#include "core/errors.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/shard_rebuild.h"
#include "train/messages.h"

namespace gradshare::train {

ShardSnapshots::ShardSnapshots(const DownpourLayout& layout, std::span<const float> parameters,
                               const std::optional<ckpt::Checkpoint>& resume)
    : layout_(layout), shards_(static_cast<std::size_t>(layout.servers())) {
  const auto workers = static_cast<std::size_t>(layout.workers());
  for (int s = 1; s < layout.servers(); ++s) {
    const auto start = parameters.subspan(layout.shard(s).begin, layout.shard(s).size());
    shards_[static_cast<std::size_t>(s)] = {
        s, 0, {start.begin(), start.end()},
        resume ? server_shard_state(*resume, layout, s) : WorkerState{},
        std::vector<std::uint64_t>(workers, 0), std::vector<std::vector<std::uint64_t>>(workers)};
  }
}

void ShardSnapshots::keep(const std::map<int, DownpourState>& replies,
                          comm::ControlChannel& control, const std::vector<int>& workers) {
  if (layout_.servers() == 1) return;  // shard 0 lives with the master: nothing to rebuild
  for (int s = 1; s < layout_.servers(); ++s) {
    const auto& snapshot = replies.at(s).shard;
    if (!snapshot || snapshot->shard != s ||
        snapshot->parameters.size() != layout_.shard(s).size() ||
        snapshot->applied.size() != static_cast<std::size_t>(layout_.workers()))
      throw core::RuntimeError("parameter server " + std::to_string(s) +
                               " answered the state request without a snapshot of its shard");
    shards_[static_cast<std::size_t>(s)] = *snapshot;
  }
  for (int rank : workers) {
    DownpourSnapshotTaken taken{std::vector<std::uint64_t>(shards_.size(), 0)};
    for (int s = 1; s < layout_.servers(); ++s)
      taken.held[static_cast<std::size_t>(s)] = shards_[static_cast<std::size_t>(s)].applied.at(
          static_cast<std::size_t>(layout_.worker_index(rank)));
    send(control, rank, taken);
  }
}

std::vector<int> ShardSnapshots::send_to_replacements(const std::vector<int>& replaced,
                                                      comm::ControlChannel& control) const {
  std::vector<int> servers;
  for (int rank : replaced)
    if (layout_.is_server(rank)) {
      send(control, rank, DownpourShardRebuild{shards_.at(static_cast<std::size_t>(rank))});
      servers.push_back(rank);
    }
  return servers;
}

}  // namespace gradshare::train
