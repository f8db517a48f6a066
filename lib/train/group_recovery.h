// group_recovery.h: in-job recovery of the synchronous strategies (the dense all-reduce and
// parameter averaging) under ULFM. Their workers hold the same state after every collective
// step, so a lost worker costs only the collective it died in:
//
//  survivors and master                 replacement (a spare, or spawned)
//  a transport call fails with a process failure
//  repair (GroupSession::repair)  <-->  joins the repair
//  workers: furthest_state: the member furthest along (highest progress; a collective that
//    completed at some members only leaves them one step ahead) hands its whole state to
//    every member, the replacement included; the others drop what they did since
//  master -> every live worker: GroupResume (where the run stands at the master)
//  the worker that reports to the master sends again what the master says it lacks (an epoch
//    model, a checkpoint, the final model); every worker then trains on
//
// A failure during any of this starts it again. fault_tolerance.on_worker_failure: replace
// (spares, or processes spawned without them), shrink (the others go on; the epoch's remaining
// minibatches are split over fewer workers) or abort (shrink, then stop with a checkpoint and
// the requeue code).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/transport_error.h"
#include "comm/worker_group.h"
#include "core/timer.h"
#include "ft/recovery_report.h"
#include "train/group_session.h"
#include "train/messages.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// master -> each live worker after a repair: what the master has.
struct GroupResume {
  static constexpr comm::Tag kTag = tags::kGroupResume;
  bool stop = false;                   // stop with a checkpoint (a stop signal, or abort)
  bool finish = false;                 // early stopping asked the workers to finish
  std::int64_t epochs_evaluated = 0;   // epoch models it has evaluated
  std::int64_t checkpoint_mark = -1;   // the position of its newest checkpoint (-1: none)
  static auto fields(auto& self) {
    return std::tie(self.stop, self.finish, self.epochs_evaluated, self.checkpoint_mark);
  }
};

// The master's side: repairs and records each recovery.
class GroupRecovery {
 public:
  GroupRecovery(runtime::RunContext& context, GroupSession& session);
  // A transport call failed: true once the job is repaired and `rebuild` (what the role builds on
  // the repaired job, if anything) has run (both again while more processes fail meanwhile);
  // false when the failure is not one the session can repair.
  bool repair(const comm::TransportError& error, const std::function<void()>& rebuild = {});
  // The recovery under way: who was lost and who replaced.
  const ft::RecoveryRecord& current() const { return pending_; }
  // After repair() (and the role's own reset): tells every live worker where the run stands —
  // a GroupResume with what the master has, `stop` to checkpoint and stop — and records the
  // recovery.
  void resume(bool stop, bool finish, std::int64_t epochs_evaluated, std::int64_t checkpoint_mark);
  // A new master (master_takeover.h), after the repair that made it so: the same GroupResume,
  // and a record that names the lost master.
  void resume_after_takeover(const RepairOutcome& repair, bool stop, bool finish,
                             std::int64_t epochs_evaluated, std::int64_t checkpoint_mark);
  // A new master that resumes its workers itself (Downpour): records the takeover `repair`,
  // with `detail` after the note that names the lost master.
  void record_takeover(const RepairOutcome& repair, const std::string& detail = "");
  // Records the recovery under way as done (resume() does it too): `resumed_from` says what the
  // workers went on from.
  void record(const std::string& resumed_from);
  void summarize() const { log_.summarize(); }

 private:
  runtime::RunContext& context_;
  GroupSession& session_;
  ft::RecoveryLog log_;
  // GroupResume to every live worker.
  void send_resume(bool stop, bool finish, std::int64_t epochs_evaluated,
                   std::int64_t checkpoint_mark);

  ft::RecoveryRecord pending_;
  core::Stopwatch clock_;  // from the failure seen
  // A takeover: the time from the repair's start until clock_ started, which clock_ misses.
  double earlier_seconds_ = 0;
};

// The workers' side, collective over the repaired group: the state of the member furthest
// along (the highest `progress`, the lowest index among equals) to every member, as bytes. A
// replacement passes an empty state. Throws RuntimeError when no member has a state.
std::vector<std::uint8_t> furthest_state(comm::WorkerGroup& group, std::uint64_t progress,
                                         std::vector<std::uint8_t> state);

// Whether a rank's recovery costs training: a worker logs the pause it saw ("training paused
// ... by the recovery", which the benches read); a Downpour parameter server trains nothing.
enum class RecoveryPause { kLogged, kNotTraining };

// A worker's run (or a Downpour server's): `train` until it returns its exit code; after a
// process failure the session repairs and `rejoin` brings the rank back (furthest_state, then
// the master's GroupResume; a server's shard on the rebuilt transport), again while more
// processes fail. A replacement rejoins first. A Shutdown that arrived before the failure ends
// the run instead. Any other failure propagates.
// A repair that makes the rank the master (master_takeover.h) ends it with BecameMaster.
int run_with_recovery(GroupSession& session, bool replacement, const std::function<int()>& train,
                      const std::function<void()>& rejoin,
                      RecoveryPause pause = RecoveryPause::kLogged);

}  // namespace gradshare::train
