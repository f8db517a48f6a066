// sharing/master_checkpoint.cpp: the master's checkpoints: the workers' state and the
// master's parameters at the same cut (sharing/checkpoint_cut.h), taken while the workers train
// on (aggregating: while they pause for the cut) and written while relaying goes on.
#include "train/sharing/master.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
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
  if (drain_.targets_sent()) return;
  // One due while the last is still collected (its states crossing a slow link) follows it.
  if (checkpoint_.under_way()) {
    checkpoint_.due_again();
    return;
  }
  request_checkpoint_now();
}

void SharingMaster::request_checkpoint_now() {
  if (exchange_.aggregating())
    checkpoint_.start(exchange_.begin_cut(), live_, progress_->steps(), control());
  else
    checkpoint_.start(model_.parameters(), live_, progress_->steps(), control());
}

std::map<int, StateReply> SharingMaster::fetch_worker_states() {
  if (!checkpoint_.under_way()) request_checkpoint_now();
  while (!checkpoint_.replied(live_)) {
    const auto message = control().receive(comm::kAnySource, StateChunk::kTag,
                                           "worker state for the checkpoint");
    checkpoint_.take_piece(message.source, decode<StateChunk>(message), control());
  }
  return checkpoint_.take_replies();
}

void SharingMaster::complete_cut() {
  core::Deadline deadline(control().timeout_seconds());
  core::Backoff backoff;
  while (!checkpoint_.cut().complete(exchange_)) {
    if (deadline.expired())
      throw core::RuntimeError("timed out waiting for the workers' updates sent before their "
                               "checkpoint replies (a checkpoint's cut)");
    if (relay() > 0)
      backoff.reset();
    else
      backoff.wait();
  }
}

void SharingMaster::write_checkpoint_if_complete() {
  if (checkpoint_.under_way() && checkpoint_.replied(live_) &&
      checkpoint_.cut().complete(exchange_))
    write_checkpoint(fetch_worker_states());
}

ckpt::Checkpoint SharingMaster::checkpoint_of(const nn::Model& model, std::int64_t iteration,
                                              const runtime::DataPosition& position,
                                              std::vector<std::uint64_t> version_vector,
                                              const std::map<int, StateReply>& workers) {
  auto c = runtime::make_checkpoint(context_, model, nullptr, iteration, position);
  // Parts as soon as one worker wrote its own: the master writes those of the others.
  const bool parts = std::any_of(workers.begin(), workers.end(),
                                 [](const auto& reply) { return !reply.second.part.empty(); });
  if (!workers.empty()) {
    const auto& first = workers.begin()->second.state;
    c.optimizer_step = first.optimizer_step;
    if (!parts) c.optimizer_state = first.optimizer_state;
    for (const auto& [worker, reply] : workers) {
      const auto& state = reply.state;
      tau_[static_cast<std::size_t>(worker - 1)] = state.tau;
      if (parts) {
        c.worker_parts.push_back(reply.part.empty() ? write_worker_part(checkpointer_.directory(),
                                                                        iteration, worker, state)
                                                    : reply.part);
        continue;
      }
      c.worker_optimizers.push_back(
          ckpt::OptimizerState{state.optimizer_step, state.optimizer_state});
      c.residuals.insert(c.residuals.end(), state.residual.begin(), state.residual.end());
    }
  }
  c.thresholds = tau_;
  c.version_vector = std::move(version_vector);
  return c;
}

std::optional<std::pair<int, std::string>> SharingMaster::unseen_part(
    const std::map<int, StateReply>& workers) const {
  // A shared file system may cache a lookup that failed (NFS keeps negative entries for a
  // while): a part is given a second before it counts as unseen.
  core::Deadline grace(1.0);
  core::Backoff backoff(50'000);
  for (const auto& [worker, reply] : workers) {
    const std::string path = runtime::checkpoint_path(checkpointer_.directory(), reply.part);
    while (!reply.part.empty() && !std::filesystem::exists(path)) {
      if (grace.expired()) return std::make_pair(worker, reply.part);
      backoff.wait();
    }
  }
  return std::nullopt;
}

void SharingMaster::write_checkpoint(const std::map<int, StateReply>& workers) {
  if (const auto unseen = unseen_part(workers)) {
    // The workers write where the master cannot read: a run directory each node has its own
    // of. From now on their states come whole; this checkpoint is taken again so.
    core::log_warn("rank " + std::to_string(unseen->first) + " wrote its part of the checkpoint (" +
                   unseen->second +
                   ") where the master does not see it (is the run directory "
                   "on a file system every node shares?): the workers' state comes to the master "
                   "from now on");
    checkpoint_.stop_asking_for_parts();
    checkpoint_.abandon();
    write_checkpoint(fetch_worker_states());
    return;
  }
  complete_cut();
  // The cut's parameters go through the evaluation model, which is idle outside relay_during.
  const auto& cut = checkpoint_.cut();
  const auto parameters = cut.parameters();
  std::copy(parameters.begin(), parameters.end(), snapshot_.parameters().begin());
  const auto checkpoint = checkpoint_of(
      snapshot_, checkpoint_.steps(), scheduler_->position_without(checkpoint_.finished_past_cut()),
      cut.version_vector(exchange_), workers);
  checkpoint_.end();
  relay_during([&] { checkpointer_.write(checkpoint); });
  if (checkpoint_.take_due_again() && !stopping_) request_checkpoint();
}

}  // namespace gradshare::train
