// sharing/master_checkpoint.cpp: the master's checkpoints: the workers' state, the updates
// they sent before it applied here, then one consistent snapshot written while relaying goes on.
#include "train/sharing/master.h"

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
  if (checkpoint_requested_ || drain_sent_) return;
  request_checkpoint_now();
}

std::map<int, StateReply> SharingMaster::fetch_worker_states() {
  if (!checkpoint_requested_) request_checkpoint_now();
  for (int w : live_)
    if (!state_replies_.count(w))
      state_replies_[w] = receive<StateReply>(control(), w, "worker state for the checkpoint");
  checkpoint_requested_ = false;
  std::map<int, StateReply> replies;
  replies.swap(state_replies_);
  return replies;
}

void SharingMaster::apply_updates_sent_before(const std::map<int, StateReply>& replies) {
  core::Deadline deadline(control().timeout_seconds());
  core::Backoff backoff;
  for (;;) {
    int behind = -1;
    for (const auto& [worker, reply] : replies)
      if (exchange_.highest_applied(worker) < reply.sent_seq) behind = worker;
    if (behind < 0) return;
    if (deadline.expired())
      throw core::RuntimeError("timed out waiting for rank " + std::to_string(behind) +
                               "'s updates before a checkpoint (applied up to seq " +
                               std::to_string(exchange_.highest_applied(behind)) + " of " +
                               std::to_string(replies.at(behind).sent_seq) + ")");
    if (exchange_.poll(model_.parameters()) > 0)
      backoff.reset();
    else
      backoff.wait();
  }
}

void SharingMaster::request_checkpoint_now() {
  for (int w : live_) send(control(), w, StateRequest{});
  checkpoint_requested_ = true;
}

ckpt::Checkpoint SharingMaster::checkpoint_now(const std::map<int, StateReply>& workers) {
  auto c = make_checkpoint(context_, model_, nullptr, progress_->steps(), scheduler_->position());
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
  c.version_vector = exchange_.version_vector();
  return c;
}

void SharingMaster::write_checkpoint(const std::map<int, StateReply>& workers) {
  apply_updates_sent_before(workers);
  const auto checkpoint = checkpoint_now(workers);
  for (const auto& [worker, reply] : workers) send(control(), worker, StateTaken{});
  relay_during([&] { checkpointer_.write(checkpoint); });
}

}  // namespace gradshare::train
