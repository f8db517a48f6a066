// sharing/worker_recovery.cpp: a worker after a process failure: the repair, the resync with
// the master (what it has, what it lacks), and a replacement's start from the master's model.
#include "train/sharing/worker.h"

#include "codec/exact.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/takeover.h"

namespace gradshare::train {

void SharingWorker::join() {
  core::log_info("replacement for rank " + std::to_string(context_.rank) + ": joining the job");
  guarded([&] { resync(); });
}

void SharingWorker::recover() {
  core::Stopwatch paused;  // what the failure cost this surviving worker's training
  injector_.at_recovery();
  if (heartbeat_) heartbeat_->pause();  // the repair replaces the channel the beats go on
  repeat_while_processes_fail([&] {
    if (const auto repaired = session_.repair({}); repaired.became_master)
      throw SharingBecameMaster(handover(repaired.former_rank));
    exchange_.attach(session_.plane());
    // The dead are gone; a replacement counts from its first update (aggregating, the relay's
    // restart starts every link again: restart_relay).
    if (!exchange_.aggregating()) staleness_.forget_peers(session_.live_workers());
    resync();
  });
  if (heartbeat_) heartbeat_->resume();
  log_recovery_pause(paused.seconds());
}

SharingHandover SharingWorker::handover(int former_rank) const {
  // The residual leaves as this worker's last updates, exact: the new master applies them and
  // the resync hands them to every replica (sharing/takeover.h).
  std::vector<std::vector<std::uint8_t>> residual;
  const auto carried = codec::encode_exact_pieces(
      encoder_.residual(),
      {static_cast<std::uint32_t>(context_.rank), seq_ + 1, static_cast<std::uint64_t>(clock_),
       current_epoch_, 0},
      0, encoder_.max_message_bytes(), residual);
  if (carried.empty()) residual.clear();
  // The figures the worker's end-of-run summary gives of its residual (residual_l2, _max_abs).
  const auto norms = kernels::cpu::norm_stats(encoder_.residual().data(), n_);
  core::log_info("this worker becomes the master; its residual (updates below the threshold, L2 "
                 "norm " + std::to_string(norms.l2) + ", largest " +
                 std::to_string(norms.max_abs) + ", " + std::to_string(carried.size()) +
                 " elements) goes to every replica as " + std::to_string(residual.size()) +
                 " exact update(s)");
  SharingHandover handed{ReplicaState{replica_.copy_parameters(), exchange_.applied_ids()},
                         status(), holding_ ? trained_of_held_ : 0, std::move(residual),
                         former_rank, std::nullopt};
  if (exchange_.aggregating() && exchange_.relay_parent() == 0) handed.relay = relay_upward();
  return handed;
}

void SharingWorker::note_relay_base() {
  if (exchange_.aggregating()) relay_base_ = replica_.copy_parameters();
}

RelayUpward SharingWorker::relay_upward() const {
  const auto upward = exchange_.aggregator().upward();
  return {relay_base_, {upward.begin(), upward.end()}};
}

ResyncStatus SharingWorker::status() const {
  ResyncStatus status;
  status.phase = phase_;
  status.holding = holding_;
  status.finished = finished_unacknowledged_;
  status.last_seq = seq_;
  status.conservation_error = conservation_error_;
  status.applied = exchange_.applied_ids();
  status.done = done_partitions_;
  status.clock = static_cast<std::uint64_t>(clock_);
  status.tau = encoder_.threshold();
  if (exchange_.aggregating()) {
    status.relay_parent = exchange_.relay_parent();
    status.relay_base = relay_base_fingerprint(relay_base_);
  }
  return status;
}

void SharingWorker::resync() {
  send(control(), 0, status());
  for (;;) {
    auto message = control().receive(0, std::nullopt, "the resync after a failure");
    switch (message.tag) {
      case ResyncFetch::kTag: {
        ResyncUpdates found;
        for (const auto& [origin, seq] : decode<ResyncFetch>(message).ids)
          if (auto kept = exchange_.kept(static_cast<int>(origin), seq))
            found.messages.emplace_back(kept->begin(), kept->end());
        send(control(), 0, found);
        break;
      }
      case ResyncUpdates::kTag:
        for (const auto& update : decode<ResyncUpdates>(message).messages)
          GS_CHECK(exchange_.deliver(update, replica_.parameters()), exchange_.last_error());
        break;
      case RelayUpwardFetch::kTag:
        send(control(), 0, relay_upward());
        break;
      case ResyncStateFetch::kTag:
        send(control(), 0, ReplicaState{replica_.copy_parameters(), exchange_.applied_ids()});
        break;
      case ReplicaState::kTag: {  // what this replica lacked is no longer kept anywhere
        const auto state = decode<ReplicaState>(message);
        take_parameters(state);
        exchange_.adopt(state.applied);
        break;
      }
      case RelayRestart::kTag:
        restart_relay(decode<RelayRestart>(message));
        break;
      case CheckpointRequest::kTag:  // sent before the failure: asked again after the resync
        break;
      case StateRequest::kTag:  // a live worker's optimizer state for a replacement
        send_state();
        break;
      case ReplacementStart::kTag:
        adopt(decode<ReplacementStart>(message));
        break;
      case ResyncDone::kTag:
        // Waiting for a grant, or done: ask again (a grant or a report may have been lost,
        // and a dead worker's partition may be back in the queue).
        if (phase_ != WorkerPhase::kTraining) {
          phase_ = WorkerPhase::kRequesting;
          request_pending_ = false;
        }
        finished_unacknowledged_.reset();
        outgoing_state_ = {};  // the master dropped the checkpoint under way (if any)
        pieces_ = pieces_sent_ = pieces_acknowledged_ = 0;
        drain_targets_.reset();
        drained_sent_ = false;
        drain_round_ = 0;  // aggregating: the relay's rounds and cuts count again from 1
        checkpoint_cut_ = 0;
        state_owed_ = false;
        return;
      default:
        throw core::RuntimeError(std::string("unexpected ") + tag_name(message.tag) +
                                 " message during the resync");
    }
  }
}

void SharingWorker::restart_relay(const RelayRestart& restart) {
  GS_CHECK(restart.parameters.size() == n_, "the master sent a wrong-sized model");
  // What this subtree trained that the master lacks becomes this worker's to send again: its
  // replica starts from the master's parameters, which lack it too, and applies it as an own
  // update; the fresh relay owes it whole to every link (not through this worker's encoder,
  // whose residual is clipped).
  // After a lost master, its children owe nothing (sharing/takeover.h).
  std::vector<float> unconfirmed(n_, 0.0f);
  const auto taken = restart.parent_took_all
                         ? UpdateExchange::Unconfirmed{}
                         : exchange_.take_unconfirmed(restart.parent_applied, unconfirmed);
  std::copy(restart.parameters.begin(), restart.parameters.end(), replica_.parameters().begin());
  note_relay_base();
  exchange_.restart_aggregation(session_.tree());
  staleness_.restart(sharing_staleness_bound(cfg_, session_.tree()));
  auto parameters = replica_.parameters();
  for (std::size_t i = 0; i < n_; ++i) parameters[i] -= unconfirmed[i];
  exchange_.aggregator().owe_everywhere(unconfirmed, now());
  const std::string restarted =
      "relay restarted on tree version " + std::to_string(session_.tree().version) + ": ";
  if (restart.parent_took_all) {
    core::log_info(restarted +
                   "the new master's parameters hold all this worker had taken in "
                   "(sharing/takeover.h): it owes nothing up");
    return;
  }
  core::log_info(restarted + "what the link toward the master owed and " +
                 std::to_string(taken.added_back) +
                 " message(s) the old parent lacked are this worker's to send again");
  if (!restart.parent_applied)
    core::log_warn("the old parent died: what this worker had sent it and it had not passed on "
                   "is lost with its relay residual");
  if (taken.not_kept > 0)
    core::log_warn(std::to_string(taken.not_kept) + " message(s) the old parent lacked were no "
                   "longer kept (fault_tolerance.keep_bytes): lost");
}

void SharingWorker::take_parameters(const ReplicaState& state) {
  GS_CHECK(state.parameters.size() == n_, "the master sent a wrong-sized model");
  std::copy(state.parameters.begin(), state.parameters.end(), replica_.parameters().begin());
}

void SharingWorker::adopt(const ReplacementStart& start) {
  take_parameters(start.replica);
  note_relay_base();
  if (exchange_.aggregating()) {  // on the repaired tree; the IDs are the links', all new
    exchange_.restart_aggregation(session_.tree());
    staleness_.restart(sharing_staleness_bound(cfg_, session_.tree()));
  } else {
    exchange_.restore(start.replica.applied);
  }
  restore_optimizer(start.worker, replica_.optimizer());
  encoder_.set_threshold(start.worker.tau);
  // The dead process's updates carry on from the last one any replica applied.
  seq_ = start.replica.applied.highest(context_.rank);
  done_partitions_ = start.done;
  clock_ = static_cast<std::int64_t>(start.clock);  // so the bound does not hold the others back
  core::log_info("replacement started from the master's model (update seq " + std::to_string(seq_) +
                 ", clock " + std::to_string(clock_) + ")");
}

}  // namespace gradshare::train
