// downpour/shard_zero_file.h: shard 0's newest snapshot on disk, so that a new master can rebuild
// the shard its lost predecessor served (downpour/takeover.h). Shard 0 lives in the master's
// process; the other shards' snapshots are with the master (shard_snapshots.h), which a lost
// master takes with it, but the run directory outlives it.
//
//   <run>/downpour-shard-0.snapshot:
//     magic "gsdpsh0\n" (8 bytes), crc32c of the rest: u32, length of the rest: u64,
//     the rest: a ShardSnapshot (downpour/shard_snapshot.h)
//
// Written to a temporary file and renamed over the old one, so a reader sees the old snapshot or
// the new one whole. Written only under fault tolerance, removed at the end of the run.
#pragma once

#include <string>

#include "report/run_directory.h"
#include "train/downpour/shard_snapshot.h"

namespace gradshare::train {

std::string shard_zero_path(const report::RunDirectory& run_directory);

// RuntimeError naming the file when it cannot be written (the old one then stays).
void write_shard_zero(const std::string& path, const ShardSnapshot& snapshot);
// RuntimeError naming the file and the cause: missing, truncated, not a snapshot, a checksum
// mismatch, or a snapshot of another shard.
ShardSnapshot read_shard_zero(const std::string& path);

}  // namespace gradshare::train
