// synchronous_worker.h: the skeleton of a synchronous worker (the dense all-reduce and parameter
// averaging), whose workers hold the same state after every collective step:
//
//   worker                                  master
//   <- Start {iteration, parameters, updater state}
//   train the epoch's minibatches b = first + index, first + index + W, ... (W workers),
//   with the strategy's own collective steps
//   worker index 0 -> EpochModel after each epoch but the last
//   -> the strategy's final message, then hand_in_results
//   <- Shutdown {exit code}
//
// After a process failure every worker takes the state of the member furthest along
// (group_recovery.h: the shared counters below, the strategy's own, the parameters and updater
// state), then the master's GroupResume; the strategy sends again what the master lacks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "comm/byte_io.h"
#include "data/epoch_plan.h"
#include "ft/fault_injection.h"
#include "runtime/checkpointer.h"
#include "runtime/divergence_guard.h"
#include "train/group_recovery.h"
#include "train/group_session.h"
#include "train/messages.h"
#include "train/replica.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class SynchronousWorker {
 public:
  virtual ~SynchronousWorker() = default;
  // The whole run, repairs included; the exit code.
  int run();

 protected:
  // replacement: a process that takes a failed worker's place (its state comes from the others).
  SynchronousWorker(runtime::RunContext& context, GroupSession& session, bool replacement);

  // Training from where the state stands to the end of the run; the exit code.
  virtual int train() = 0;
  // After the Start: what the strategy derives from the state it got.
  virtual void on_started() {}
  // The strategy's own part of the state a recovery hands on, after the shared counters.
  virtual void write_own_state(comm::ByteWriter& writer) {}
  virtual void read_own_state(comm::ByteReader& reader) {}
  // After a recovery loaded a state: what the strategy resets.
  virtual void on_state_loaded() {}
  // The state this worker offers a recovery, and how far along it is (furthest_state's key).
  virtual std::vector<std::uint8_t> state_to_offer() { return save_state(); }
  virtual std::uint64_t progress() const = 0;
  // After the master's GroupResume: send again what the master lacks.
  virtual void send_what_master_lacks(const GroupResume& resume) = 0;

  comm::ControlChannel& control() { return session_.control(); }
  comm::WorkerGroup& workers() { return session_.workers(); }

  // The master's Start: the parameters, updater state and data position to begin from.
  void start();
  // The plan of `epoch` (the same on every worker).
  data::EpochPlan plan_of(std::int64_t epoch) const;
  // Queues this worker's minibatches of `plan` from minibatch `first` on for reading ahead.
  void read_ahead_mine(const data::EpochPlan& plan, std::int64_t first);
  // Every worker after an epoch: keeps the epoch's model (the parameters are every worker's),
  // and worker index 0 sends it for the master to evaluate.
  void send_epoch_model();
  // After a repair, worker index 0: the kept epoch model again if the master has not evaluated
  // its epoch (a new master: the old one died with it unevaluated); the epoch sent, or -1.
  std::int64_t resend_kept_epoch_model(const GroupResume& resume);
  // The end of the run, after the worker's final message: hands in and waits for the master's
  // Shutdown (a failure then is the master's to act on: job_session.h); its exit code.
  int hand_in_and_wait();
  // The state a recovery hands on (see the header comment), and taking one.
  std::vector<std::uint8_t> save_state();
  void load_state(std::span<const std::uint8_t> bytes);
  // Counts a completed epoch's minibatches as the last epoch's.
  void end_epoch_count();

  runtime::RunContext& context_;
  const config::ExperimentConfig& cfg_;
  GroupSession& session_;
  const std::int64_t batches_;    // minibatches of an epoch
  // The schedule's clock: steps as an undisturbed run with the starting workers counts them.
  const std::int64_t per_epoch_;
  const std::int64_t total_steps_;
  Replica replica_;
  runtime::Checkpointer checkpointer_;
  runtime::DivergenceGuard divergence_;
  ft::FaultInjector injector_;  // fault_tolerance.inject
  std::int64_t steps_here_ = 0;  // training steps this process took (what injections count)
  bool started_ = false;  // holds the run's state (from the master's Start or a resync)
  std::int64_t step_ = 0;       // the schedule's clock
  std::int64_t iteration_ = 0;  // minibatches of the run the group trained
  std::int64_t epoch_minibatches_ = 0;       // by the group in the epoch under way
  std::int64_t last_epoch_minibatches_ = 0;  // by the group in the epoch completed last
  std::int64_t checkpoint_mark_ = -1;        // the newest checkpoint's position (-1: none)
  bool stop_asked_ = false;    // a stop signal, the master's StateRequest or GroupResume
  bool finish_asked_ = false;  // early stopping: the master's Finish
  std::optional<EpochModel> kept_epoch_model_;  // the newest epoch's (not handed on by a repair)

 private:
  void rejoin();
  const bool replacement_;
};

}  // namespace gradshare::train
