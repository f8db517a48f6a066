// sharing/master_recovery.cpp: the master after a worker failed: the repair, the resync that
// makes every replica equal again, the dead workers' partitions back in the queue, and the
// start of a replacement (sharing/recovery.h).
#include "train/sharing/master.h"

#include <algorithm>

#include "train/join_info.h"

namespace gradshare::train {

void SharingMaster::repair_and_resync(const std::string& cause) {
  core::log_warn("process failure: " + cause + "; recovering");
  core::Stopwatch clock;
  repeat_while_processes_fail([&] {
    if (relays_restarted_)
      throw core::RuntimeError(
          "a process failed while the aggregating relays restarted after an earlier failure: "
          "what was on its way can no longer be accounted for; the job ends, and the same "
          "command resumes it from its newest checkpoint");
    const auto tree_before = session_.tree();
    auto job = session_.repair(join_info(context_));
    core::log_info("tree version " + std::to_string(session_.tree().version) + " (" +
                   cfg_.topology.remap + " remap): new parents: " +
                   topology::parent_changes(tree_before, session_.tree()));
    exchange_.attach(session_.plane());
    live_ = session_.live_workers();
    ft::RecoveryRecord record{job};
    record.tree_version = session_.tree().version;
    for (int w : job.lost) forget_worker(w, record);
    resync(record);
    record.seconds = clock.seconds();
    recoveries_.add(record);
  });
  relays_restarted_ = false;
  liveness_.restart(live_);
  stop_if_failure_aborts(
      "finishing the partitions in flight, checkpointing, and exiting with the requeue code");
}

void SharingMaster::finish_partition(int worker, std::uint64_t last_seq) {
  const auto held = scheduler_->in_flight(worker);
  scheduler_->complete(worker);
  // Reported after the worker's state for the checkpoint under way (the control channel keeps
  // a worker's messages in order): trained past its cut, so not done in that checkpoint.
  if (held) checkpoint_.finished(worker, *held);
  // Aggregating, no repair can ask which updates reached a survivor (recover()).
  if (exchange_.aggregating()) return;
  auto& unconfirmed = finished_unconfirmed_[worker];
  if (held) unconfirmed.push_back({*held, last_seq});
  const auto applied = exchange_.highest_applied(worker);
  std::erase_if(unconfirmed, [&](const auto& finished) { return finished.second <= applied; });
}

void SharingMaster::reopen_lost_partitions(const std::vector<int>& lost) {
  for (int worker : lost) {
    const auto applied = exchange_.highest_applied(worker);
    for (const auto& [grant, last_seq] : finished_unconfirmed_[worker]) {
      if (last_seq <= applied) continue;
      const bool reopened = scheduler_->reopen(grant);
      core::log_warn(
          "partition " + std::to_string(grant.partition) + " of epoch " +
          std::to_string(grant.epoch + 1) + ", finished by lost rank " + std::to_string(worker) +
          ": its updates after seq " + std::to_string(applied) + " (up to " +
          std::to_string(last_seq) + ") reached no survivor; " +
          (reopened ? "trained again" : "its epoch was complete already, so they are lost"));
    }
    finished_unconfirmed_.erase(worker);
  }
}

void SharingMaster::forget_worker(int worker, ft::RecoveryRecord& record) {
  const auto held = scheduler_->in_flight(worker);
  if (held && !exchange_.aggregating()) {  // aggregating, the IDs are the links', not its own
    const auto seen = exchange_.highest_applied(worker);
    const auto since = grant_seq_[worker];
    record.retrained_minibatches += static_cast<std::int64_t>(seen > since ? seen - since : 0);
  }
  scheduler_->requeue_worker(worker);  // its partition and its reservations
  drain_.forget(worker);
}

void SharingMaster::restart_relays(const std::map<int, ResyncStatus>& survivors,
                                   const std::vector<int>& lost) {
  // Each survivor's RelayRestart but the parameters (one copy, sent to all): what its old
  // parent took in of its.
  std::map<int, RelayRestart> restarts;
  const auto applied_here = exchange_.applied_ids();
  for (const auto& [w, s] : survivors) {
    auto& restart = restarts[w];
    const int parent = s.relay_parent;
    if (parent == 0 && lost_master_relays_)
      restart.parent_took_all = true;
    else if (parent == 0)
      restart.parent_applied = applied_here.highest(w);
    else if (const auto found = survivors.find(parent); found != survivors.end())
      restart.parent_applied = found->second.applied.highest(w);
    else if (lost_master_relays_ && parent == lost_master_relays_->former_rank)
      restart.parent_applied = lost_master_relays_->former_applied.highest(w);
  }
  // A lost master's relay residuals, and a promoted worker's, are in the children's sums.
  const auto accounted = [&](int dead) {
    return lost_master_relays_ && (dead == 0 || dead == lost_master_relays_->former_rank);
  };
  for (int dead : lost)
    if (!accounted(dead))
      core::log_warn("rank " + std::to_string(dead) +
                     " died holding its relay residuals: what its subtree had sent it and it had "
                     "not passed on, and what it had not trained on into its own messages, is "
                     "lost");
  // The master's parameters hold what reached it; the survivors start again from them and send
  // again what the master lacks of theirs (RelayRestart).
  relays_restarted_ = true;
  exchange_.restart_aggregation(session_.tree());
  RelayRestart message{{model_.parameters().begin(), model_.parameters().end()}, std::nullopt};
  for (const auto& [w, restart] : restarts) {
    message.parent_applied = restart.parent_applied;
    message.parent_took_all = restart.parent_took_all;
    send(control(), w, message);
  }
}

void SharingMaster::resync(ft::RecoveryRecord& record) {
  const auto status = collect_statuses();
  reconcile_schedule(status);
  finish_resync(status, record);
}

std::map<int, ResyncStatus> SharingMaster::collect_statuses() {
  std::map<int, ResyncStatus> status;
  for (int w : live_)
    status[w] = receive<ResyncStatus>(control(), w, "its status after the repair");
  return status;
}

void SharingMaster::reconcile_schedule(const std::map<int, ResyncStatus>& status) {
  for (const auto& [w, s] : status) {
    if (s.phase == WorkerPhase::kJoining) continue;
    const auto held = scheduler_->in_flight(w);
    if (held && s.finished && same(*held, *s.finished))
      scheduler_->complete(w);
    else if (held && !(s.holding && same(*held, *s.holding)))
      scheduler_->requeue_worker(w);
    if (s.phase != WorkerPhase::kTraining) scheduler_->requeue_worker(w);  // holds nothing
  }
}

void SharingMaster::finish_resync(const std::map<int, ResyncStatus>& status,
                                  ft::RecoveryRecord& record) {
  std::vector<int> joining;
  std::map<int, ResyncStatus> survivors;
  for (const auto& [w, s] : status) {
    if (s.phase == WorkerPhase::kJoining)
      joining.push_back(w);
    else
      survivors.emplace(w, s);
  }
  if (exchange_.aggregating()) {
    restart_relays(survivors, record.lost);
    record.resync_whole_states += static_cast<int>(survivors.size());
  } else {
    const auto moved = resync_updates(control(), exchange_, model_.parameters(), survivors);
    record.resync_updates += moved.updates;
    record.resync_whole_states += moved.whole_states;
  }
  reopen_lost_partitions(record.lost);
  // The survivors train on at once; a replacement catches up meanwhile, from the master's model
  // and applied IDs (the updates the others publish from now on reach it on the data plane and
  // are applied if newer than that snapshot, by update ID). Only the survivor whose optimizer
  // state the replacement copies waits for that copy.
  int donor = -1;
  if (!joining.empty())
    for (const auto& [w, s] : survivors) donor = w;
  for (const auto& [w, s] : survivors)
    if (w != donor) send(control(), w, ResyncDone{});
  std::optional<WorkerState> donor_state;
  if (donor > 0) {
    send(control(), donor, StateRequest{});
    donor_state = receive<StateReply>(control(), donor, "optimizer state for a replacement").state;
    send(control(), donor, ResyncDone{});
  }
  for (int w : joining) {
    if (!record.was_replaced(w)) ++record.late_starts;
    start_replacement(w, donor, donor_state);
    send(control(), w, ResyncDone{});
  }
  // Every worker asks for partitions again and reports kDone anew; the drain restarts.
  drain_.restart();
  // A checkpoint under way (or whose request failed half sent) is asked for again.
  if (checkpoint_.abandon()) request_checkpoint();
}

bool SharingMaster::same(const runtime::PartitionGrant& a, const runtime::PartitionGrant& b) {
  return a.epoch == b.epoch && a.partition == b.partition;
}

void SharingMaster::start_replacement(int worker, int donor,
                                      const std::optional<WorkerState>& donor_state) {
  ReplacementStart start;
  start.replica = {{model_.parameters().begin(), model_.parameters().end()},
                   exchange_.applied_ids()};
  start.clock = clocks_[static_cast<std::size_t>(worker)];
  start.done = scheduler_->done_partitions();
  if (donor_state) {
    start.worker = *donor_state;
    start.worker.residual.clear();
  } else {
    core::log_warn("no live worker to copy the optimizer state from: rank " +
                   std::to_string(worker) + " starts with a fresh optimizer");
    start.worker.tau = tau_[static_cast<std::size_t>(worker - 1)];
  }
  send(control(), worker, start);
  core::log_info("rank " + std::to_string(worker) + " replaced: started from the master's model" +
                 (donor > 0 ? " and rank " + std::to_string(donor) + "'s optimizer state" : ""));
}

}  // namespace gradshare::train
