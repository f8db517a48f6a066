// sharing/checkpoint_collection.cpp: CheckpointCollection (see checkpoint_collection.h).
#include "train/sharing/checkpoint_collection.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/log.h"
#include "train/messages.h"
#include "train/sharing/protocol.h"

namespace gradshare::train {

void CheckpointCollection::start(std::span<const float> parameters,
                                 const std::vector<int>& workers, std::int64_t steps,
                                 comm::ControlChannel& control) {
  cut_.emplace(parameters, workers);
  ask(workers, steps, control);
}

void CheckpointCollection::start(std::uint64_t cut, const std::vector<int>& workers,
                                 std::int64_t steps, comm::ControlChannel& control) {
  cut_.emplace(cut, workers);
  ask(workers, steps, control);
}

void CheckpointCollection::ask(const std::vector<int>& workers, std::int64_t steps,
                               comm::ControlChannel& control) {
  steps_ = steps;
  finished_past_cut_.clear();
  requested_ = true;
  ++started_;
  for (int w : workers) send(control, w, CheckpointRequest{steps, parts_});
}

bool CheckpointCollection::take_due_again() { return std::exchange(again_, false); }

bool CheckpointCollection::abandon() {
  again_ = false;
  return end();
}

void CheckpointCollection::finished(int worker, const runtime::PartitionGrant& partition) {
  if (cut_ && cut_->has_cut(worker)) finished_past_cut_.push_back(partition);
}

void CheckpointCollection::take_piece(int worker, const StateChunk& piece,
                                      comm::ControlChannel& control) {
  if (!cut_ || !cut_->asked(worker)) {
    core::log_warn("rank " + std::to_string(worker) +
                   " sent checkpoint state with no checkpoint asked of it: ignored");
    return;
  }
  if (piece.index >= piece.count || (piece.index > 0 && !pieces_.count(worker))) {
    core::log_warn("rank " + std::to_string(worker) + " sent checkpoint state piece " +
                   std::to_string(piece.index) + " of " + std::to_string(piece.count) +
                   " out of order: ignored");
    return;
  }
  auto& bytes = pieces_[worker];
  if (piece.index == 0) {
    cut_->set_cut(worker, piece.sent_seq);
    bytes.clear();
  }
  bytes.insert(bytes.end(), piece.bytes.begin(), piece.bytes.end());
  state_bytes_ += static_cast<std::int64_t>(piece.bytes.size());
  send(control, worker, StateChunkAck{piece.checkpoint, piece.index});
  if (piece.index + 1 < piece.count) return;
  auto reply = decode<StateReply>(bytes);
  part_bytes_ += static_cast<std::int64_t>(reply.part_bytes);
  replies_[worker] = std::move(reply);
  pieces_.erase(worker);
}

bool CheckpointCollection::replied(const std::vector<int>& workers) const {
  return std::all_of(workers.begin(), workers.end(),
                     [&](int w) { return replies_.count(w) > 0; });
}

std::map<int, StateReply> CheckpointCollection::take_replies() {
  std::map<int, StateReply> replies;
  replies.swap(replies_);
  return replies;
}

bool CheckpointCollection::end() {
  const bool asked = requested_ || cut_.has_value();
  requested_ = false;
  replies_.clear();
  pieces_.clear();
  finished_past_cut_.clear();
  cut_.reset();
  return asked;
}

}  // namespace gradshare::train
