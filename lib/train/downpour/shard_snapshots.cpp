// downpour/shard_snapshots.cpp: ShardSnapshots (see shard_snapshots.h).
#include "train/downpour/shard_snapshots.h"

#include <filesystem>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/shard_rebuild.h"
#include "train/downpour/shard_zero_file.h"
#include "train/messages.h"

namespace gradshare::train {

ShardSnapshots::ShardSnapshots(const DownpourLayout& layout, std::span<const float> parameters,
                               const std::optional<ckpt::Checkpoint>& resume,
                               std::string shard_zero_file)
    : layout_(layout), shards_(static_cast<std::size_t>(layout.servers())),
      shard_zero_file_(std::move(shard_zero_file)) {
  const auto workers = static_cast<std::size_t>(layout.workers());
  for (int s = 0; s < layout.servers(); ++s) {
    const auto start = parameters.subspan(layout.shard(s).begin, layout.shard(s).size());
    shards_[static_cast<std::size_t>(s)] = ShardSnapshot{
        s, 0, {start.begin(), start.end()},
        resume ? server_shard_state(*resume, layout, s) : WorkerState{},
        std::vector<std::uint64_t>(workers, 0), std::vector<std::vector<std::uint64_t>>(workers)};
  }
  if (!shard_zero_file_.empty()) write_shard_zero(shard_zero_file_, *shards_[0]);
}

void ShardSnapshots::keep(const std::map<int, DownpourState>& replies,
                          const std::optional<ShardSnapshot>& shard_zero,
                          comm::ControlChannel& control, const std::vector<int>& workers) {
  for (int s = 1; s < layout_.servers(); ++s) {
    const auto& snapshot = replies.at(s).shard;
    if (!snapshot || snapshot->shard != s ||
        snapshot->parameters.size() != layout_.shard(s).size() ||
        snapshot->applied.size() != static_cast<std::size_t>(layout_.workers()))
      throw core::RuntimeError("parameter server " + std::to_string(s) +
                               " answered the state request without a snapshot of its shard");
    shards_[static_cast<std::size_t>(s)] = *snapshot;
  }
  if (keeps_shard_zero() && shard_zero) {
    try {
      write_shard_zero(shard_zero_file_, *shard_zero);
      shards_[0] = *shard_zero;
    } catch (const core::RuntimeError& error) {
      // The workers keep their pushes to shard 0 until a snapshot of it is written.
      core::log_warn(std::string(error.what()) + "; the workers keep their pushes to shard 0");
    }
  }
  for (int rank : workers) {
    DownpourSnapshotTaken taken{std::vector<std::uint64_t>(shards_.size(), 0)};
    for (int s = 0; s < layout_.servers(); ++s)
      if (shards_[static_cast<std::size_t>(s)])
        taken.held[static_cast<std::size_t>(s)] =
            shards_[static_cast<std::size_t>(s)]->applied.at(
                static_cast<std::size_t>(layout_.worker_index(rank)));
    send(control, rank, taken);
  }
}

ShardSnapshots::ShardSnapshots(const DownpourLayout& layout, const ShardSnapshot& shard_zero,
                               std::string shard_zero_file)
    : layout_(layout), shards_(static_cast<std::size_t>(layout.servers())),
      shard_zero_file_(std::move(shard_zero_file)) {
  shards_[0] = shard_zero;
  if (!shard_zero_file_.empty()) write_shard_zero(shard_zero_file_, shard_zero);
}

std::vector<int> ShardSnapshots::send_to_replacements(const std::vector<int>& replaced,
                                                      comm::ControlChannel& control) const {
  std::vector<int> servers;
  for (int rank : replaced)
    if (rank != 0 && layout_.is_server(rank)) {
      const auto& snapshot = shards_.at(static_cast<std::size_t>(rank));
      if (!snapshot)
        throw core::JobCannotGoOn(
            "parameter server " + std::to_string(rank) +
            " was lost before the new master had a snapshot of its shard; rerun the same "
            "command to resume every shard from the newest checkpoint");
      send(control, rank, DownpourShardRebuild{*snapshot});
      servers.push_back(rank);
    }
  return servers;
}

void ShardSnapshots::remove_shard_zero_file() const {
  if (shard_zero_file_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove(shard_zero_file_, ignored);
}

}  // namespace gradshare::train
