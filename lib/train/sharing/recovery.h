// sharing/recovery.h: what gradient-sharing processes tell each other when a failure was
// repaired (comm/repair.h, SharingSession::repair), so that training goes on with nothing lost
// and nothing applied twice.
//
//  every survivor                                    master
//  --------------                                    ------
//  ResyncStatus {phase, partition held /         --> reconciles the partition schedule (a dead
//    finished, last seq, applied IDs}                  worker's partition and grants lost in
//                                                      flight go back to the queue)
//                                                 <-- ResyncFetch {IDs the master lacks}
//  ResyncUpdates {those messages, from the       -->   (to whoever applied them)
//    kept ones}                                        applies them; when some are no longer
//                                                      kept there:
//                                                 <-- ResyncStateFetch
//  ReplicaState                                  -->   adopts it, then applies its own kept
//                                                      messages that replica lacked
//                                                 <-- ResyncUpdates {what this one lacks}, or
//  applies them / adopts it                            ReplicaState when some of those are no
//                                                      longer kept here
//                                                 <-- ResyncDone (every survivor but the
//                                                      donor below: they train on at once)
//                                                      a replacement: StateRequest to a live
//                                                      worker (the donor), ResyncDone to it,
//                                                      ReplacementStart and ResyncDone to the
//                                                      replacement
//  carries on where it was (a request for a partition is sent again; a worker that had no
//  partition left asks again, since a dead worker's partition may be back in the queue)
//
// The survivors do not wait for the replacement's start (its model, 3 x the parameters with
// Adam's state, crosses the network meanwhile): the updates they publish after their ResyncDone
// reach the replacement on the data plane and are applied after its snapshot, each only if its
// ID is not in the snapshot's applied IDs.
//
// Updates that were in flight on the abandoned data plane are in some replica's kept messages
// (UpdateExchange keeps its own newest and the newest peer messages within
// fault_tolerance.keep_bytes); the master collects every ID any survivor applied, so afterwards
// every replica holds the same set. A whole state (parameters and applied IDs) stands in for
// messages that are no longer kept: the memory a replica keeps does not grow with the workers.
// Aggregating (topology.aggregate) the IDs are the links', so no update can be fetched: instead
// of ResyncFetch / ResyncUpdates every survivor gets a RelayRestart (below), and a replacement
// starts with a fresh relay.
// A replacement starts from the master's parameters and applied IDs (its snapshot), an optimizer state proxied from a live
// worker (the master does not train), an empty residual, and continues the dead process's seq.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "train/messages.h"
#include "runtime/partition_scheduler.h"
#include "train/sharing/update_exchange.h"
#include "train/worker_state.h"

namespace gradshare::train {

enum class WorkerPhase : std::uint8_t {
  kTraining = 0,    // holds a partition
  kRequesting = 1,  // waits for a grant
  kDone = 2,        // no partition left: in the drain
  kJoining = 3,     // a replacement waiting for its start
};

struct ResyncStatus {
  WorkerPhase phase = WorkerPhase::kJoining;
  std::optional<runtime::PartitionGrant> holding;  // granted and not finished
  std::optional<runtime::PartitionGrant>
      finished;                            // finished; no grant has answered that report yet
  std::uint64_t last_seq = 0;              // of its own updates
  double conservation_error = -1;
  AppliedIds applied;
  // For a new master (master_takeover.h), which rebuilds the schedule and the staleness
  // clocks from them: every partition this worker knows done (its own, and those done when it
  // started as a replacement), its clock and threshold.
  std::vector<runtime::PartitionGrant> done;
  std::uint64_t clock = 0;
  float tau = 0;
  // Aggregating: the parent on the tree its relay ran on (-1: none, or not aggregating); a new
  // master asks the lost master's children what they sent it (sharing/takeover.h).
  std::int32_t relay_parent = -1;
  // Aggregating: a fingerprint of the parameters its relay last (re)started from. Every relay
  // restarts from the same ones; survivors that differ were caught mid-restart by the failure.
  std::uint64_t relay_base = 0;

  static constexpr comm::Tag kTag = tags::kRecovery;
  void write(comm::ByteWriter& writer) const;
  static ResyncStatus read(comm::ByteReader& reader);
};

// A replica's whole state: its parameters hold exactly the updates `applied`.
struct ReplicaState {
  std::vector<float> parameters;
  AppliedIds applied;

  static constexpr comm::Tag kTag = tags::kResyncState;
  void write(comm::ByteWriter& writer) const;
  static ReplicaState read(comm::ByteReader& reader);
};

// What a replacement starts from.
struct ReplacementStart {
  ReplicaState replica;  // the master's
  WorkerState worker;  // optimizer state and tau of a live worker; residual empty
  std::uint64_t clock = 0;  // the dead rank's newest clock the master applied (staleness.h)
  std::vector<runtime::PartitionGrant>
      done;  // every partition done so far (for a new master's schedule)

  static constexpr comm::Tag kTag = tags::kReplacementStart;
  static auto fields(auto& self) {
    return std::tie(self.replica, self.worker, self.clock, self.done);
  }
};

// master -> survivor, aggregating (topology.aggregate): the relays start again on the repaired
// tree. The survivor adds to its own residual what its link toward its old parent still owed
// and what it sent that parent past `parent_applied` (the newest of its messages that parent
// took in; none when the parent died: what it held died with it), takes the master's
// parameters and starts a fresh relay (UpdateExchange::restart_aggregation). After a lost
// master, its children owe nothing: the new master's parameters hold all they had taken in
// (`parent_took_all`, sharing/takeover.h).
struct RelayRestart {
  std::vector<float> parameters;  // the master's
  std::optional<std::uint64_t> parent_applied;
  bool parent_took_all = false;

  static constexpr comm::Tag kTag = tags::kRelayRestart;
  void write(comm::ByteWriter& writer) const;
  static RelayRestart read(comm::ByteReader& reader);
};

// An update ID: (origin, seq).
using UpdateId = std::pair<std::uint32_t, std::uint64_t>;

// master -> replica: send me these updates (the ones it missed).
struct ResyncFetch {
  static constexpr comm::Tag kTag = tags::kResyncFetch;
  std::vector<UpdateId> ids;
  void write(comm::ByteWriter& writer) const;
  static ResyncFetch read(comm::ByteReader& reader);
};

// Encoded updates a replica missed (or that the master found), either way.
struct ResyncUpdates {
  static constexpr comm::Tag kTag = tags::kResyncUpdates;
  std::vector<std::vector<std::uint8_t>> messages;
  void write(comm::ByteWriter& writer) const;
  static ResyncUpdates read(comm::ByteReader& reader);
};

// master -> replica: send me your whole state (ReplicaState).
using ResyncStateFetch = Signal<tags::kResyncStateFetch>;
// master -> workers: the resync is over, train on.
using ResyncDone = Signal<tags::kResyncDone>;

}  // namespace gradshare::train
