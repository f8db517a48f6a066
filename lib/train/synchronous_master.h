// synchronous_master.h: what the masters of the synchronous strategies (the dense all-reduce
// and parameter averaging; their workers are synchronous_worker.h) share: the Start of every
// worker, from the newest checkpoint when the run resumes; each epoch model evaluated once,
// then early stopping asked for; a divergence's end; the repair and the GroupResume after a
// process failure (group_recovery.h); the end of the run: Shutdown, the spares released, the
// summaries, model.h5.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "train/group_recovery.h"
#include "train/group_session.h"
#include "train/master_base.h"
#include "train/messages.h"

namespace gradshare::train {

class SynchronousMaster : public MasterBase {
 public:
  // Repairs the job, forgets what the workers send again, and sends them the GroupResume.
  bool recover(const comm::TransportError& error) override;

 protected:
  // Builds the model and logs it.
  SynchronousMaster(runtime::RunContext& context, GroupSession& session);

  // What the workers send again after a repair (the round or step in flight) is forgotten.
  virtual void forget_in_flight() = 0;
  // Early stopping asks the workers to finish; `reporter` sent the epoch model.
  virtual void ask_to_finish(int reporter) = 0;
  // How the workers get their updater state, for the line of a resized resume.
  virtual std::string updater_note(const ckpt::Checkpoint& resume) const { return ""; }

  // Sends every live worker its Start; the iteration (minibatches of the run trained) it starts
  // from. `strategy`: what the checkpoint's position is checked against; per_worker_updater:
  // each worker gets its own saved updater state (parameter averaging without save_updater),
  // otherwise all get the checkpoint's one.
  // A master that took a lost master's place (master_takeover.h) starts nobody: it resumes the
  // workers from what the run directory records and returns the iteration of its newest epoch.
  std::int64_t start_workers(const std::string& strategy, bool per_worker_updater);
  // An epoch model from `worker` (one sent again after a repair is skipped).
  void evaluate_epoch(const EpochModel& epoch_model, int worker);
  // The takeover's start: the run so far from metrics.jsonl, then every worker's GroupResume.
  std::int64_t take_over();
  // A worker's divergence: logged once; the run's exit code.
  int diverged(const Diverged& diverged, int worker);
  // A worker's parameters into the master's model.
  void take_parameters(std::span<const float> parameters, int worker);
  // Every worker is done: model.h5 (`step`, `minibatches`: its record) unless the run stopped
  // for a requeue, then the Shutdown with the exit code, the spares released, the summaries.
  int end_run(bool stopped, std::int64_t step, std::int64_t minibatches);

  GroupSession& session_;
  const std::int64_t batches_;  // minibatches of an epoch
  GroupRecovery recovery_;
  std::int64_t epochs_evaluated_ = 0;  // the newest epoch model evaluated
  std::int64_t checkpoint_mark_ = -1;  // the position of the newest checkpoint written
};

}  // namespace gradshare::train
