// sharing/master_checkpoint.cpp: the master's checkpoints: the workers' state and the
// master's parameters at the same cut (sharing/checkpoint_cut.h), taken while the workers train
// on and written while relaying goes on.
#include "train/sharing/master.h"

#include <utility>

namespace gradshare::train {

std::vector<std::vector<float>> SharingMaster::split_residuals(
    const ckpt::Checkpoint& checkpoint) const {
  const std::size_t n = model_.parameter_count();
  const auto workers = static_cast<std::size_t>(context_.worker_count());
  std::vector<std::vector<float>> residuals(workers, std::vector<float>(n, 0.0f));
  const std::size_t saved = checkpoint.residuals.size() / n;
  for (std::size_t r = 0; r < saved; ++r) {
    auto& target = residuals[r % workers];
    for (std::size_t i = 0; i < n; ++i) target[i] += checkpoint.residuals[r * n + i];
  }
  return saved == 0 ? std::vector<std::vector<float>>{} : residuals;
}

void SharingMaster::request_checkpoint() {
  if (drain_sent_) return;
  // One due while the last is still collected (its states crossing a slow link) follows it.
  if (checkpoint_requested_) {
    checkpoint_again_ = true;
    return;
  }
  request_checkpoint_now();
}

void SharingMaster::request_checkpoint_now() {
  cut_.emplace(model_.parameters(), live_);  // before any worker can see the request
  cut_steps_ = progress_->steps();
  done_after_cut_.clear();
  checkpoint_requested_ = true;
  for (int w : live_) send(control(), w, StateRequest{});
}

void SharingMaster::take_state_piece(int worker, const StateChunk& piece) {
  if (!cut_ || !cut_->asked(worker)) {
    core::log_warn("rank " + std::to_string(worker) +
                   " sent checkpoint state with no checkpoint asked of it: ignored");
    return;
  }
  if (piece.index >= piece.count || (piece.index > 0 && !state_pieces_.count(worker))) {
    core::log_warn("rank " + std::to_string(worker) + " sent checkpoint state piece " +
                   std::to_string(piece.index) + " of " + std::to_string(piece.count) +
                   " out of order: ignored");
    return;
  }
  auto& bytes = state_pieces_[worker];
  if (piece.index == 0) {
    cut_->set_cut(worker, piece.sent_seq);
    bytes.clear();
  }
  bytes.insert(bytes.end(), piece.bytes.begin(), piece.bytes.end());
  send(control(), worker, StateChunkAck{piece.checkpoint, piece.index});
  if (piece.index + 1 < piece.count) return;
  state_replies_[worker] = decode<StateReply>(bytes);
  state_pieces_.erase(worker);
}

std::map<int, StateReply> SharingMaster::fetch_worker_states() {
  if (!checkpoint_requested_) request_checkpoint_now();
  for (;;) {
    const bool all = std::all_of(live_.begin(), live_.end(),
                                 [&](int w) { return state_replies_.count(w) > 0; });
    if (all) break;
    const auto message = control().receive(comm::kAnySource, StateChunk::kTag,
                                           "worker state for the checkpoint");
    take_state_piece(message.source, decode<StateChunk>(message));
  }
  std::map<int, StateReply> replies;
  replies.swap(state_replies_);
  return replies;
}

void SharingMaster::complete_cut() {
  core::Deadline deadline(control().timeout_seconds());
  core::Backoff backoff;
  while (!cut_->complete(exchange_)) {
    if (deadline.expired())
      throw core::RuntimeError("timed out waiting for the workers' updates sent before their "
                               "checkpoint replies (a checkpoint's cut)");
    if (exchange_.poll(model_.parameters()) > 0)
      backoff.reset();
    else
      backoff.wait();
  }
}

void SharingMaster::write_checkpoint_if_complete() {
  if (checkpoint_requested_ && state_replies_.size() == live_.size() &&
      cut_->complete(exchange_))
    write_checkpoint(fetch_worker_states());
}

ckpt::Checkpoint SharingMaster::checkpoint_of(const nn::Model& model, std::int64_t iteration,
                                              const DataPosition& position,
                                              std::vector<std::uint64_t> version_vector,
                                              const std::map<int, StateReply>& workers) {
  auto c = make_checkpoint(context_, model, nullptr, iteration, position);
  if (!workers.empty()) {
    const auto& first = workers.begin()->second.state;
    c.optimizer_step = first.optimizer_step;
    c.optimizer_state = first.optimizer_state;
    for (const auto& [worker, reply] : workers) {
      const auto& state = reply.state;
      c.worker_optimizers.push_back(
          ckpt::OptimizerState{state.optimizer_step, state.optimizer_state});
      tau_[static_cast<std::size_t>(worker - 1)] = state.tau;
      c.residuals.insert(c.residuals.end(), state.residual.begin(), state.residual.end());
    }
  }
  c.thresholds = tau_;
  c.version_vector = std::move(version_vector);
  return c;
}

void SharingMaster::write_checkpoint(const std::map<int, StateReply>& workers) {
  complete_cut();
  // The cut's parameters go through the evaluation model, which is idle outside relay_during.
  std::copy(cut_->parameters().begin(), cut_->parameters().end(), snapshot_.parameters().begin());
  const auto checkpoint =
      checkpoint_of(snapshot_, cut_steps_, scheduler_->position_without(done_after_cut_),
                    cut_->version_vector(exchange_), workers);
  cut_.reset();
  done_after_cut_.clear();
  checkpoint_requested_ = false;
  relay_during([&] { checkpointer_.write(checkpoint); });
  if (std::exchange(checkpoint_again_, false) && !stopping_) request_checkpoint();
}

}  // namespace gradshare::train
