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
// master's whole state). A dead worker's residual dies with it.
//
// Aggregating relays (topology.aggregate): no replica equals the lost master's, and its relay
// residuals (what one child sent it that the others had not yet been sent) died with it. But
// everything it held came from its children, and each child knows what it contributed to its
// link toward the master since the relays last started, all from one base B: its upward sum
// U_c (AggregatingRelay::upward: sent up, in flight, or still owed). The new master asks each
// surviving child (and takes its own, when it was one):
//
//  the lost master's children                      the new master
//  --------------------------                      --------------
//                                            <--   RelayUpwardFetch
//  RelayUpward {B, U_c}                      -->   parameters B - sum of U_c (the bases must be
//                                                  equal): everything any child had taken in,
//                                                  each once, more than the lost master held
//  RelayRestart {those parameters, the       <--   then the restart of any aggregating repair,
//    parent took all}: owes nothing                except that a child owes nothing up
//
// A deeper survivor owes again what its own parent lacks, as after any repair. Lost: only what
// a child that died with the master had not passed on. A promoted worker must have been a
// child of the lost master (the lowest worker, on the trees topology builds); its residual is
// in the parameters every relay restarts from. Every survivor's relay must have started from
// the same parameters (ResyncStatus::relay_base): a master lost while it restarted the relays
// leaves some restarted and some not, whose applied IDs no longer tell what their parents
// took in, and the job ends (it resumes from its newest checkpoint).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "train/master_takeover.h"
#include "train/sharing/recovery.h"

namespace gradshare::train {

// new master -> a lost master's child (aggregating): send your RelayUpward.
using RelayUpwardFetch = Signal<tags::kRelayUpwardFetch>;

// A lost master's child -> the new master: the parameters its relay started from and what it
// contributed to its link toward the master since (AggregatingRelay::upward).
struct RelayUpward {
  std::vector<float> base;
  std::vector<float> upward;

  static constexpr comm::Tag kTag = tags::kRelayUpward;
  static auto fields(auto& self) { return std::tie(self.base, self.upward); }
};

// The new master's parameters from the lost master's children: base - sum of upward, each of
// `parameter_count`. Throws core::RuntimeError, naming the reason, when no child survived, a
// size is wrong, or the bases differ.
std::vector<float> parameters_from_children(const std::vector<RelayUpward>& children,
                                            std::size_t parameter_count);

// ResyncStatus::relay_base: FNV-1a over the parameters' bytes.
std::uint64_t relay_base_fingerprint(std::span<const float> base);

// What a worker that became the master brings to the role.
struct SharingHandover {
  ReplicaState replica;  // its parameters and the updates they hold
  ResyncStatus status;   // what it would have told a new master as a survivor
  // Minibatches of the partition it held that it trained: that partition is trained again.
  std::int64_t trained_of_held = 0;
  // Its residual as its last updates (codec/exact.h: origin its rank, seqs after its last);
  // empty when the residual was zero. replica does not hold them yet.
  std::vector<std::vector<std::uint8_t>> residual;
  int former_rank = -1;  // its rank as a worker
  // Aggregating, when it was a child of the lost master (status.relay_parent 0): its sums.
  std::optional<RelayUpward> relay;
};

// Thrown out of a worker's run once a repair made it the master (run_gradient_sharing).
class SharingBecameMaster : public BecameMaster {
 public:
  explicit SharingBecameMaster(SharingHandover handover) : handover(std::move(handover)) {}
  SharingHandover handover;
};

}  // namespace gradshare::train
