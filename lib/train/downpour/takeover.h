// downpour/takeover.h: Downpour's master failover (train/master_takeover.h). The master serves
// shard 0 and hands out partitions; everything else it knows the workers, the other servers and
// the run directory hold, so under `mpirun --with-ft ulfm` its loss costs a repair, not a restart:
//
//  every surviving worker                      the new master (a spare or a worker, by node)
//  ----------------------                      ---------------------------------------------
//  network rebuilt, links carried over  <-->   network made (rebuilt, for a former worker)
//  DownpourPushLog {its pushes to shard 0 -->  shard 0 rebuilt (shard_rebuild.h): shard 0's
//    that its newest snapshot lacks}           newest snapshot from the run directory
//                                              (shard_zero_file.h) plus those pushes, replayed
//  DownpourTakeoverStatus {every          -->  the schedule: the epochs metrics.jsonl records as
//    partition it knows done}                  evaluated, then the partitions the newest
//                                              checkpoint and the workers know done
//  resync from every server (shard 0's   <--   DownpourResync, then DownpourResume {done lists
//    from the new master), then resume          for replacements}; the other servers' snapshots
//                                              asked for at once (a lost server is rebuilt
//                                              from them)
//
// Every push the lost master applied to shard 0 is applied once to the rebuilt shard, as for a
// lost server. A worker that becomes the master brings its own pushes to shard 0 and the
// partitions it knows done (DownpourHandover); what it had computed and not pushed yet (under
// downpour.n_push steps' worth) is lost with its worker role, as a dead worker's is, and its
// partition in flight is trained again. A replacement learns every partition done when it
// resumes (DownpourResume::done), so that a worker lost earlier still counts for a new master.
// Partitions finished only by a rank lost with the master are trained again. The progress
// figures of the final summary count from the takeover.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/downpour/network.h"
#include "train/downpour/server.h"
#include "train/downpour/shard_rebuild.h"
#include "train/master_takeover.h"
#include "runtime/partition_scheduler.h"

namespace gradshare::train {

// What a worker that became the master brings to the role.
struct DownpourHandover {
  int worker_rank = -1;
  DownpourPushLog shard_zero_log;      // its pushes to shard 0 since the snapshot
  std::vector<runtime::PartitionGrant> done;  // every partition it knows done
};

// Thrown out of a Downpour worker's run once a repair made it the master.
class DownpourBecameMaster : public BecameMaster {
 public:
  explicit DownpourBecameMaster(DownpourHandover handover) : handover(std::move(handover)) {}
  DownpourHandover handover;
};

// What the new master starts from.
struct DownpourTakeover {
  std::unique_ptr<ShardServer> server;  // shard 0, rebuilt
  RunSoFar so_far;
  runtime::DataPosition position;  // the rebuilt schedule's
};

// The new master's first steps on the network the takeover's repair made (collective with the
// survivors' rebuild, as for any replacement): shard 0 rebuilt and the schedule from the
// workers' reports. JobCannotGoOn when shard 0's file cannot be read.
DownpourTakeover take_over_downpour(runtime::RunContext& context, DownpourNetwork& network,
                                    const std::optional<DownpourHandover>& handover);

}  // namespace gradshare::train
