// downpour/shard_snapshot.h: a parameter-server shard's whole state, which the master keeps to
// rebuild a lost server from (downpour/shard_rebuild.h).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/byte_io.h"
#include "train/worker_state.h"

namespace gradshare::train {

// A shard's whole state between two pushes.
//   {shard: i32, version: u64, parameters: f32[], optimizer: worker state, applied: u64[],
//    workers: u64, that many own: u64[]}
struct ShardSnapshot {
  std::int32_t shard = -1;
  std::uint64_t version = 0;
  std::vector<float> parameters;
  WorkerState optimizer;               // the server optimizer's state vectors
  std::vector<std::uint64_t> applied;  // per worker index: seq of its last push applied
  // Per worker index: the versions its pushes made that the ages of its next ones discount
  // (ShardUpdater's own versions).
  std::vector<std::vector<std::uint64_t>> own;

  void write(comm::ByteWriter& writer) const;
  static ShardSnapshot read(comm::ByteReader& reader);
};

}  // namespace gradshare::train
