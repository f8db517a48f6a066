// sharing/checkpoint_collection.h: the checkpoint the gradient-sharing master is collecting
// while its workers train on: the cut of its parameters (sharing/checkpoint_cut.h), each
// worker's state arriving in pieces, acknowledged one at a time
//
//   master                                    worker w
//   CheckpointRequest {iteration, parts}  -->  (with parts: its part file written)
//                                         <-- StateChunk {cut, piece i of n}
//   StateChunkAck {i}                     -->  (the next piece may go)
//
// the partitions a worker finished past its cut (not in this checkpoint), and whether another
// checkpoint came due meanwhile. The master writes the checkpoint once every reply is in and
// the cut complete (sharing/master_checkpoint.cpp); a repair abandons it and asks again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "codec/decoder.h"
#include "comm/control_channel.h"
#include "runtime/partition_scheduler.h"
#include "train/sharing/checkpoint_cut.h"
#include "train/sharing/protocol.h"
#include "train/worker_state.h"

namespace gradshare::train {

class CheckpointCollection {
 public:
  // Whether one is being collected.
  bool under_way() const { return requested_; }
  // Starts one: the cut of `parameters` (before any worker can see the request), then a
  // CheckpointRequest to each of `workers`; `steps`: the run's steps at the request.
  void start(std::span<const float> parameters, const std::vector<int>& workers,
             std::int64_t steps, comm::ControlChannel& control);
  // Aggregating: the same, the cut being the relays' cut number `cut` (checkpoint_cut.h).
  void start(std::uint64_t cut, const std::vector<int>& workers, std::int64_t steps,
             comm::ControlChannel& control);
  // Another came due while this one is collected: it follows this one.
  void due_again() { again_ = true; }
  // Whether one came due meanwhile (and no longer).
  bool take_due_again();

  // An update the master has just applied.
  void applied(const codec::ParsedMessage& message) {
    if (cut_) cut_->applied(message);
  }
  // `worker` finished `partition`: after its state, when its cut is known (the control channel
  // keeps a worker's messages in order), so trained past its cut and not in this checkpoint.
  void finished(int worker, const runtime::PartitionGrant& partition);
  // A piece of `worker`'s state: acknowledged; the first sets the worker's cut, the last
  // completes its reply. A piece nobody asked for, or out of order, is logged and ignored.
  void take_piece(int worker, const StateChunk& piece, comm::ControlChannel& control);

  // Every one of `workers` has replied.
  bool replied(const std::vector<int>& workers) const;
  // The replies, taken.
  std::map<int, StateReply> take_replies();
  // The cut (under_way() only).
  const CheckpointCut& cut() const { return *cut_; }
  // Aggregating: copies `parameters` as the cut once it is due there (CheckpointCut::copy_due);
  // whether it did.
  bool copy_cut_if_due(const UpdateExchange& exchange, std::span<const float> parameters) {
    if (!cut_ || !cut_->copy_due(exchange)) return false;
    cut_->copy(parameters);
    return true;
  }
  // The partitions finished past their worker's cut, and the run's steps at the request.
  const std::vector<runtime::PartitionGrant>& finished_past_cut() const {
    return finished_past_cut_;
  }
  std::int64_t steps() const { return steps_; }

  // Ends the one under way, written or abandoned; whether one had been asked for (a request
  // half sent included).
  bool end();
  // A repair abandons the one under way, to ask for it again: as end(), and one that came due
  // meanwhile is dropped (the one asked for again covers it).
  bool abandon();

  // The collections started over the run, the bytes of worker state taken in (what checkpoints
  // add to the links beside the updates: each worker's residual and optimizer state every
  // time, unless it wrote them to its part) and the bytes the workers wrote to their parts.
  std::int64_t started() const { return started_; }
  std::int64_t state_bytes() const { return state_bytes_; }
  std::int64_t part_bytes() const { return part_bytes_; }
  // Workers are asked to write their parts until the master finds one it cannot see: then
  // every state comes whole.
  void stop_asking_for_parts() { parts_ = false; }

 private:
  void ask(const std::vector<int>& workers, std::int64_t steps, comm::ControlChannel& control);

  bool requested_ = false;
  bool again_ = false;
  std::int64_t steps_ = 0;
  std::optional<CheckpointCut> cut_;
  std::map<int, StateReply> replies_;
  std::map<int, std::vector<std::uint8_t>> pieces_;  // replies still arriving
  std::vector<runtime::PartitionGrant> finished_past_cut_;
  std::int64_t started_ = 0;
  std::int64_t state_bytes_ = 0;
  std::int64_t part_bytes_ = 0;
  bool parts_ = true;
};

}  // namespace gradshare::train
