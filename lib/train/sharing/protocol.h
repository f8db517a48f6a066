// sharing/protocol.h: gradient sharing's control messages besides the shared ones
// (train/messages.h), the reports (sharing/worker_report.h), the worker state
// (train/worker_state.h) and the recovery messages (sharing/recovery.h). The updates themselves
// travel on the data plane (sharing/update_exchange.h); the control channel carries:
//
//  worker                                          master
//                                             <--  Start {0, StartState}
//  PartitionRequest {finished, last seq}      -->
//                                             <--  PartitionGrant (nothing left: empty)
//  SharingReport every logging.every_steps     -->  progress line, metrics.jsonl
//  Heartbeat while it waits                   -->  liveness
//                                             <--  CheckpointRequest (a checkpoint is due; a
//                                                    copy of its parameters starts the cut)
//    aggregating (topology.aggregate): the worker pauses at its next step, its reply waits for
//    its marker (sharing/aggregating_relay.h) and it trains on; the cut is a copy of the
//    master's parameters once every child's marker is in
//  with parts: optimizer state and residual
//    written to its part of the checkpoint
//  StateChunk {sent seq, piece of a StateReply} the cut takes every update up to the seq
//    one at a time, training on               -->  (sharing/checkpoint_cut.h); a partition
//                                                  reported after the first piece is not done
//                                                  in this checkpoint
//                                             <--  StateChunkAck per piece
//                                                  once every reply is whole and every update
//                                                  up to the cuts applied: the checkpoint
//  SharingDone {last seq, ...} when no
//    partition is left                        -->
//                                             <--  SharingDrainTarget {last seq per origin;
//                                                    aggregating: the flush round that drains}
//  DrainedReport once every update is in      -->  model equivalence, relay counts
//                                             <--  Shutdown {exit code}
//  Diverged                                   -->  Shutdown {3} to every worker
#pragma once

#include <cstdint>
#include <vector>

#include "train/messages.h"

namespace gradshare::train {

// worker -> master: no partition left for it.
struct SharingDone {
  static constexpr comm::Tag kTag = tags::kSharingDone;
  std::uint64_t last_seq = 0;     // of its own updates: every replica must apply up to it
  double conservation_error = 0;  // largest relative error of its residual's bookkeeping
  std::int64_t peak_bytes = 0;    // its peak resident memory
  static auto fields(auto& self) {
    return std::tie(self.last_seq, self.conservation_error, self.peak_bytes);
  }
};

// master -> worker: a checkpoint at the run's step `iteration` is taken (a copy of the
// master's parameters starts the cut). With `parts` the worker writes its optimizer state and
// residual to its part file (runtime::worker_part_name) beside the checkpoint and replies with
// a StateReply that names the part and holds the rest; without, or when the write fails, the
// StateReply holds the whole state.
struct CheckpointRequest {
  static constexpr comm::Tag kTag = tags::kCheckpointRequest;
  std::int64_t iteration = 0;
  bool parts = false;
  static auto fields(auto& self) { return std::tie(self.iteration, self.parts); }
};

// worker -> master: a piece of its checkpoint state (a StateReply's bytes). The next piece goes
// once the master has acknowledged this one (StateChunkAck): on a slow link the worker's
// updates, which share it, then wait behind one piece at most, and training goes on while the
// state crosses (sharing/checkpoint_cut.h).
struct StateChunk {
  static constexpr comm::Tag kTag = tags::kStateChunk;
  std::uint64_t checkpoint = 0;  // the worker's count of state requests answered
  std::uint64_t sent_seq = 0;    // the worker's cut: the first piece tells the master
  std::uint32_t index = 0;
  std::uint32_t count = 0;
  std::vector<std::uint8_t> bytes;
  static auto fields(auto& self) {
    return std::tie(self.checkpoint, self.sent_seq, self.index, self.count, self.bytes);
  }
};
// The size of a StateChunk's piece of a `state_bytes` state. Across a network: 16 KiB at least,
// at most 256 pieces: an update behind a piece on the link waits 1.3 ms at 100 Mbit/s at most,
// where the whole state (2.8 MB for the MLP) held every update of three workers up for 0.7 s
// and the staleness bound stopped them all. On the master's node: the whole state.
std::size_t state_piece_bytes(std::size_t state_bytes, bool across_network);

// master -> worker: piece `index` of the worker's state for its `checkpoint`-th request is in
// (both echoed: a late acknowledgement of an earlier checkpoint is told apart and dropped).
struct StateChunkAck {
  static constexpr comm::Tag kTag = tags::kStateChunkAck;
  std::uint64_t checkpoint = 0;
  std::uint32_t index = 0;
  static auto fields(auto& self) { return std::tie(self.checkpoint, self.index); }
};

// master -> workers: the last seq of every origin (index = rank) each replica must reach;
// aggregating (topology.aggregate), the flush round after which every replica has everything
// instead (sharing/aggregating_relay.h; 0 otherwise).
struct SharingDrainTarget {
  static constexpr comm::Tag kTag = tags::kSharingDrainTarget;
  std::vector<std::uint64_t> last_seq;
  std::uint64_t flush_round = 0;
  static auto fields(auto& self) { return std::tie(self.last_seq, self.flush_round); }
};

}  // namespace gradshare::train
