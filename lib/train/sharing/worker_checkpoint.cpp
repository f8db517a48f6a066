// sharing/worker_checkpoint.cpp: a worker's part in the master's checkpoints
// (sharing/checkpoint_collection.h): its state at its cut, written to its part of the
// checkpoint or sent whole in pieces, and, aggregating, the pause for the relays' cut (the class
// is in sharing/worker.h).
#include "train/sharing/worker.h"

#include <filesystem>

namespace gradshare::train {

StateReply SharingWorker::current_state() {
  if (!exchange_.aggregating() || !exchange_.aggregator().parent())
    return {seq_,
            capture_worker_state(replica_.optimizer(), encoder_.threshold(), encoder_.residual()),
            "", 0};
  // Aggregating, what the link toward the master still owes is this subtree's training the
  // master lacks: it travels with this worker's residual (aggregating_relay.h, checkpoint cuts).
  std::vector<float> residual(encoder_.residual().begin(), encoder_.residual().end());
  const auto owed = exchange_.aggregator().residual(*exchange_.aggregator().parent());
  for (std::size_t i = 0; i < n_; ++i) residual[i] += owed[i];
  return {seq_, capture_worker_state(replica_.optimizer(), encoder_.threshold(), residual), "", 0};
}

void SharingWorker::send_state() { send(control(), 0, current_state()); }

StateReply SharingWorker::part_of(StateReply state, std::int64_t iteration) {
  const std::string directory = context_.run_directory.checkpoint_dir();
  try {
    state.part = write_worker_part(directory, iteration, context_.rank, state.state);
  } catch (const std::exception& error) {
    core::log_warn(std::string(error.what()) + ": the state goes to the master instead");
    return state;
  }
  state.state.optimizer_state.clear();
  state.state.residual.clear();
  state.part_bytes = static_cast<std::uint64_t>(
      std::filesystem::file_size(runtime::checkpoint_path(directory, state.part)));
  return state;
}

void SharingWorker::checkpoint_state() {
  outgoing_state_ =
      encode(checkpoint_request_.parts ? part_of(current_state(), checkpoint_request_.iteration)
                                       : current_state());
  state_cut_seq_ = seq_;
  ++states_sent_;
  // In pieces one at a time across a network, whole on the master's node (protocol.h).
  piece_bytes_ = state_piece_bytes(outgoing_state_.size(), session_.master_on_another_node());
  pieces_ = static_cast<std::uint32_t>((outgoing_state_.size() + piece_bytes_ - 1) / piece_bytes_);
  pieces_sent_ = pieces_acknowledged_ = 0;
  send_state_piece();
}

void SharingWorker::send_state_piece() {
  const std::size_t begin = static_cast<std::size_t>(pieces_sent_) * piece_bytes_;
  const std::size_t end = std::min(outgoing_state_.size(), begin + piece_bytes_);
  StateChunk piece{states_sent_, state_cut_seq_, pieces_sent_, pieces_, {}};
  piece.bytes.assign(outgoing_state_.begin() + static_cast<std::ptrdiff_t>(begin),
                     outgoing_state_.begin() + static_cast<std::ptrdiff_t>(end));
  send(control(), 0, piece);
  ++pieces_sent_;
}

void SharingWorker::take_state_acknowledgements() {
  while (auto ack = try_receive<StateChunkAck>(control(), 0)) {
    // A late one for an earlier checkpoint (this worker answered the next request first).
    if (ack->checkpoint != states_sent_ || ack->index != pieces_acknowledged_ ||
        pieces_acknowledged_ >= pieces_sent_)
      continue;
    ++pieces_acknowledged_;
    if (pieces_sent_ < pieces_) send_state_piece();
  }
  if (pieces_ > 0 && pieces_acknowledged_ == pieces_) {
    outgoing_state_ = {};
    pieces_ = pieces_sent_ = pieces_acknowledged_ = 0;
  }
}

void SharingWorker::pause_for_checkpoint() {
  checkpoint_cut_ = exchange_.begin_cut();
  state_owed_ = true;
  exchange_.aggregator().set_training(false);
  send_state_after_marker();
}

void SharingWorker::send_state_after_marker() {
  exchange_.send_aggregates(now(), false);  // the marker, if every child's is in
  if (!exchange_.cut_complete(checkpoint_cut_)) return;
  state_owed_ = false;
  checkpoint_state();  // taken now, sent in pieces while training goes on
  exchange_.release_cut(replica_.parameters(), now());
}

}  // namespace gradshare::train
