// sharing/takeover.h: gradient sharing's master failover (train/master_takeover.h). Every
// worker's replica equals the master's up to the updates in flight, so a lost master costs no
// restart: after the repair gives rank 0 to a spare or to the lowest worker,
//
//  every surviving worker                          the new master
//  ----------------------                          --------------
//  ResyncStatus {as after any repair, and     -->  the model: its own replica (a former
//    every partition it knows done, its             worker's: ReplicaState below) or the
//    clock and threshold}                           fullest survivor's (ResyncStateFetch)
//                                                  the schedule: epochs metrics.jsonl records
//                                                    evaluated, then the partitions the newest
//                                                    checkpoint and the workers know done; a
//                                                    partition a survivor holds stays its
//                                                  then the resync of any repair
//                                                    (sharing/recovery.h): updates, ResyncDone,
//                                                    replacements
//
// A worker learns every partition done so far when it starts as a replacement
// (ReplacementStart::done), so a dead worker's partitions stay known after it was replaced.
// Partitions finished only by a rank lost with the master are trained again (counted). A
// former worker's residual (its updates below the threshold) is not lost with its worker role:
// it becomes that worker's last updates, exact messages the new master applies before the
// resync, which hands them to every survivor as any update one lacks (or, no longer kept, the
// master's whole state). A dead worker's residual dies with it. Aggregating relays
// (topology.aggregate) hold state no survivor has: there the master's loss ends the job as
// before (Strategy::master_failover).
#pragma once

#include "train/master_takeover.h"
#include "train/sharing/recovery.h"

namespace gradshare::train {

// What a worker that became the master brings to the role.
struct SharingHandover {
  ReplicaState replica;  // its parameters and the updates they hold
  ResyncStatus status;   // what it would have told a new master as a survivor
  // Minibatches of the partition it held that it trained: that partition is trained again.
  std::int64_t trained_of_held = 0;
  // Its residual as its last updates (codec/exact.h: origin its rank, seqs after its last);
  // empty when the residual was zero. replica does not hold them yet.
  std::vector<std::vector<std::uint8_t>> residual;
};

// Thrown out of a worker's run once a repair made it the master (run_gradient_sharing).
class SharingBecameMaster : public BecameMaster {
 public:
  explicit SharingBecameMaster(SharingHandover handover) : handover(std::move(handover)) {}
  SharingHandover handover;
};

}  // namespace gradshare::train
