// sharing/master_takeover.cpp: a new gradient-sharing master inside the job: its model, its
// schedule rebuilt from what the workers report, and the resync (sharing/takeover.h).
#include <algorithm>
#include <chrono>
#include <set>

#include "codec/decoder.h"
#include "train/join_info.h"
#include "train/sharing/master.h"

namespace gradshare::train {

namespace {

void add_sorted(std::vector<int>& to, const std::vector<int>& ranks) {
  to.insert(to.end(), ranks.begin(), ranks.end());
  std::sort(to.begin(), to.end());
  to.erase(std::unique(to.begin(), to.end()), to.end());
}

// A former worker's residual, its last updates (sharing/takeover.h): applied to its replica once,
// before any repeat of the takeover, and kept, so that the resync hands them to every survivor.
void take_residual(UpdateExchange& exchange, SharingHandover& handover) {
  if (handover.residual.empty()) return;
  exchange.adopt(handover.replica.applied);
  for (const auto& message : handover.residual)
    if (!exchange.deliver(message, handover.replica.parameters))
      throw core::RuntimeError("the new master cannot apply the residual it brought: " +
                               exchange.last_error());
  handover.replica.applied = exchange.applied_ids();
}

// Aggregating, the former worker's residual goes into the parameters every relay restarts
// from: applied here, it is in every replica and in every later base.
void apply_residual(const SharingHandover& handover, std::span<float> parameters) {
  for (const auto& message : handover.residual) {
    std::string error;
    GS_CHECK(codec::apply_message(message, parameters, &error),
             "the new master's residual does not decode: " + error);
  }
}

// Aggregating: every survivor's relay (re)started from the same parameters, or the failure
// caught the relays mid-restart (sharing/takeover.h).
void check_relay_bases(const std::optional<SharingHandover>& handover,
                       const std::map<int, ResyncStatus>& status) {
  std::set<std::uint64_t> bases;
  if (handover && handover->status.phase != WorkerPhase::kJoining)
    bases.insert(handover->status.relay_base);
  for (const auto& [w, s] : status)
    if (s.phase != WorkerPhase::kJoining) bases.insert(s.relay_base);
  if (bases.size() > 1)
    throw core::RuntimeError(
        "the master was lost while it restarted the aggregating relays: some survivors had "
        "restarted and some not, so what their parents took in can no longer be told; the job "
        "ends, and the same command resumes it from its newest checkpoint");
}

}  // namespace

int SharingMaster::take_over(std::optional<SharingHandover> handover) {
  runtime::log_model(model_);
  if (handover && !exchange_.aggregating()) take_residual(exchange_, *handover);
  const auto so_far = read_run_so_far(context_);
  reporter_.continue_from(so_far.wall_seconds, so_far.stopped_early);
  const auto& repair = session_.last_repair();
  const auto began = repair.began;
  ft::RecoveryRecord record{repair};
  bool again = false;
  repeat_while_processes_fail([&] {
    if (again && relays_restarted_)
      throw core::RuntimeError(
          "a process failed while the aggregating relays restarted under a new master: what "
          "was on its way can no longer be accounted for; the job ends, and the same command "
          "resumes it from its newest checkpoint");
    if (again) {  // another process failed during the takeover: repaired, it starts over
      const auto more = session_.repair(join_info(context_));
      exchange_.attach(session_.plane());
      add_sorted(record.lost, more.lost);
      add_sorted(record.replaced, more.replaced);
      record.rounds += more.rounds;
    }
    again = true;
    adopt_run(handover, so_far, record);
  });
  relays_restarted_ = false;
  lost_master_relays_.reset();
  record.tree_version = session_.tree().version;
  record.seconds = std::chrono::duration<double>(core::Clock::now() - began).count();
  recoveries_.add(record);
  load_evaluation_sets(context_);  // the workers train meanwhile
  took_over_at_ = so_far.steps;
  return run_from(so_far.steps);
}

void SharingMaster::adopt_run(const std::optional<SharingHandover>& handover,
                              const RunSoFar& so_far, ft::RecoveryRecord& record) {
  live_ = session_.live_workers();
  const auto status = collect_statuses();
  adopt_model(handover, status);
  scheduler_.emplace(cfg_.training.epochs, static_cast<std::int64_t>(shape_.partition_count()),
                     rebuilt_position(so_far, status, handover), shape_.partition_sizes(),
                     cfg_.data.prefetch_partitions);
  // The staleness clocks: a survivor's own; a rank lost with the master, or replaced since,
  // starts level with the newest, so that it holds nobody back.
  std::uint64_t newest = handover ? handover->status.clock : 0;
  for (const auto& [w, s] : status) newest = std::max(newest, s.clock);
  std::fill(clocks_.begin() + 1, clocks_.end(), newest);
  for (const auto& [w, s] : status) {
    if (s.phase == WorkerPhase::kJoining) continue;
    if (s.phase == WorkerPhase::kTraining && s.holding) scheduler_->adopt_in_flight(w, *s.holding);
    clocks_[static_cast<std::size_t>(w)] = s.clock;
    tau_[static_cast<std::size_t>(w - 1)] = s.tau;
  }
  if (handover) record.retrained_minibatches = handover->trained_of_held;
  finish_resync(status, record);
  for (int w : live_) grant_seq_[w] = exchange_.highest_applied(w);
  liveness_.restart(live_);
  const auto position = scheduler_->position();
  core::log_info("the schedule goes on at epoch " + std::to_string(position.first_epoch + 1) +
                 " with " + std::to_string(position.partitions_done.size()) +
                 " partitions of it and later epochs done, as the checkpoint and the workers "
                 "report");
}

void SharingMaster::adopt_model(const std::optional<SharingHandover>& handover,
                                const std::map<int, ResyncStatus>& status) {
  if (exchange_.aggregating()) {
    adopt_aggregated_model(handover, status);
    return;
  }
  ReplicaState state;
  if (handover) {
    state = handover->replica;
  } else {
    int fullest = -1;
    std::size_t most = 0;
    for (const auto& [w, s] : status)
      if (s.phase != WorkerPhase::kJoining && (fullest < 0 || s.applied.count() > most)) {
        fullest = w;
        most = s.applied.count();
      }
    if (fullest < 0)
      throw core::RuntimeError(
          "the master was lost and no worker that survived it holds the model: the job ends, "
          "and the same command resumes it from its newest checkpoint");
    send(control(), fullest, ResyncStateFetch{});
    state = receive<ReplicaState>(control(), fullest, "its model for the new master");
  }
  if (state.parameters.size() != model_.parameter_count())
    throw core::RuntimeError("the new master got a model of " +
                             std::to_string(state.parameters.size()) + " parameters, not " +
                             std::to_string(model_.parameter_count()));
  std::copy(state.parameters.begin(), state.parameters.end(), model_.parameters().begin());
  exchange_.adopt(state.applied);
}

void SharingMaster::adopt_aggregated_model(const std::optional<SharingHandover>& handover,
                                           const std::map<int, ResyncStatus>& status) {
  check_relay_bases(handover, status);
  // A promoted worker that had not started (kJoining) brings no relay, and no residual.
  const bool brings_relay = handover && handover->status.phase != WorkerPhase::kJoining;
  std::vector<RelayUpward> children;
  if (brings_relay && handover->status.relay_parent != 0)
    throw core::RuntimeError(
        "the master was lost and its place went to rank " + std::to_string(handover->former_rank) +
        ", which was not its child on the aggregating tree: what that rank's parent held is "
        "lost; the job ends, and the same command resumes it from its newest checkpoint");
  if (brings_relay) children.push_back(*handover->relay);
  for (const auto& [w, s] : status) {
    if (s.phase == WorkerPhase::kJoining || s.relay_parent != 0) continue;
    send(control(), w, RelayUpwardFetch{});
    children.push_back(receive<RelayUpward>(control(), w, "what it sent the lost master"));
  }
  const auto parameters = parameters_from_children(children, model_.parameter_count());
  std::copy(parameters.begin(), parameters.end(), model_.parameters().begin());
  if (brings_relay) apply_residual(*handover, model_.parameters());
  lost_master_relays_ = handover ? LostMasterRelays{handover->former_rank, handover->status.applied}
                                 : LostMasterRelays{};
  core::log_info("the new master's model: what the lost master's " +
                 std::to_string(children.size()) +
                 " surviving child(ren) on the aggregating tree had taken in");
}

runtime::DataPosition SharingMaster::rebuilt_position(
    const RunSoFar& so_far, const std::map<int, ResyncStatus>& status,
    const std::optional<SharingHandover>& handover) const {
  std::vector<runtime::PartitionGrant> reported;
  for (const auto& [w, s] : status) reported.insert(reported.end(), s.done.begin(), s.done.end());
  if (handover) reported.insert(reported.end(), handover->status.done.begin(),
                                handover->status.done.end());
  return train::rebuilt_position(context_, so_far, static_cast<std::int64_t>(shape_.partition_count()),
                                 reported);
}

}  // namespace gradshare::train
