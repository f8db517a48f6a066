// group_recovery.cpp: GroupResume, GroupRecovery, furthest_state, run_with_recovery.
#include "train/group_recovery.h"

#include "core/errors.h"
#include "core/log.h"
#include "train/join_info.h"
#include "train/master_takeover.h"

namespace gradshare::train {

GroupRecovery::GroupRecovery(runtime::RunContext& context, GroupSession& session)
    : context_(context), session_(session), log_(context.metrics) {}

bool GroupRecovery::repair(const comm::TransportError& error,
                           const std::function<void()>& rebuild) {
  if (!error.is_process_failure() || !session_.fault_tolerant()) return false;
  core::log_warn(std::string("process failure: ") + error.what() + "; recovering");
  clock_.restart();
  pending_ = {};
  repeat_while_processes_fail([&] {
    const auto outcome = session_.repair(join_info(context_));
    pending_.lost.insert(pending_.lost.end(), outcome.lost.begin(), outcome.lost.end());
    pending_.replaced.insert(pending_.replaced.end(), outcome.replaced.begin(),
                             outcome.replaced.end());
    pending_.rounds += outcome.rounds;
    if (rebuild) rebuild();
  });
  return true;
}

void GroupRecovery::send_resume(bool stop, bool finish, std::int64_t epochs_evaluated,
                                std::int64_t checkpoint_mark) {
  for (int w : session_.live_workers())
    send(session_.control(), w, GroupResume{stop, finish, epochs_evaluated, checkpoint_mark});
}

void GroupRecovery::resume(bool stop, bool finish, std::int64_t epochs_evaluated,
                           std::int64_t checkpoint_mark) {
  send_resume(stop, finish, epochs_evaluated, checkpoint_mark);
  record(
      "the workers go on from the newest state any of them held (the step or averaging round "
      "the failure interrupted is trained again)");
}

void GroupRecovery::resume_after_takeover(const RepairOutcome& repair, bool stop, bool finish,
                                          std::int64_t epochs_evaluated,
                                          std::int64_t checkpoint_mark) {
  send_resume(stop, finish, epochs_evaluated, checkpoint_mark);
  record_takeover(repair);
}

void GroupRecovery::record_takeover(const RepairOutcome& repair, const std::string& detail) {
  pending_ = {repair};
  earlier_seconds_ = std::chrono::duration<double>(core::Clock::now() - repair.began).count();
  clock_.restart();
  record(takeover_note(repair) + detail);
}

void GroupRecovery::record(const std::string& resumed_from) {
  pending_.seconds = earlier_seconds_ + clock_.seconds();
  earlier_seconds_ = 0;
  pending_.resumed_from = resumed_from;
  log_.add(pending_);
}

std::vector<std::uint8_t> furthest_state(comm::WorkerGroup& group, std::uint64_t progress,
                                         std::vector<std::uint8_t> state) {
  std::uint64_t furthest[1] = {state.empty() ? 0 : progress};
  group.allreduce_max(furthest);
  // Lower indices count higher, so MAX picks the lowest index among the furthest.
  std::int32_t donor[1] = {!state.empty() && progress == furthest[0] ? group.size() - group.index()
                                                                      : 0};
  group.allreduce_max(donor);
  if (donor[0] == 0)
    throw core::RuntimeError("every worker that held the model was lost; rerun the same command "
                             "to resume from the newest checkpoint");
  const int root = group.size() - donor[0];
  std::uint64_t length[1] = {group.index() == root ? state.size() : 0};
  group.allreduce_max(length);
  state.resize(length[0]);
  group.broadcast(state, root);
  return state;
}

int run_with_recovery(GroupSession& session, bool replacement, const std::function<int()>& train,
                      const std::function<void()>& rejoin, RecoveryPause pause) {
  bool join = replacement;  // the state comes from the survivors
  for (;;) {
    try {
      if (join) {
        join = false;
        rejoin();
      }
      return train();
    } catch (const comm::TransportError& error) {
      if (!error.is_process_failure() || !session.fault_tolerant()) throw;
      if (const auto code = shutdown_before_repair(session)) return *code;
      core::log_warn(std::string("process failure: ") + error.what() + "; recovering");
    }
    core::Stopwatch paused;  // what the failure cost this surviving worker's training
    repeat_while_processes_fail([&] {
      session.repair({});
      if (session.last_repair().became_master) throw BecameMaster();
      rejoin();
    });
    if (pause == RecoveryPause::kLogged) log_recovery_pause(paused.seconds());
  }
}

}  // namespace gradshare::train
