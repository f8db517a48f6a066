// sharing/worker.h: a gradient-sharing worker (see sharing/protocol.h): trains the partitions
// the master grants on its replica, encodes each update against its residual and shares it over
// the data plane, applies and relays its peers' updates, keeps to the staleness bound, and
// takes part in the drain and, under fault tolerance, in the repair and resync. Its methods live
// in worker.cpp (training and sharing), worker_recovery.cpp and worker_drain.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "comm/byte_io.h"
#include "comm/transport_error.h"
#include "core/cpu_time.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "kernels/cpu/elementwise.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "runtime/checkpointer.h"
#include "train/job_session.h"
#include "ft/heartbeat.h"
#include "train/partition_messages.h"
#include "train/sharing/protocol.h"
#include "train/sharing/recovery.h"
#include "train/sharing/roles.h"
#include "train/sharing/staleness.h"
#include "train/sharing/momentum_mask.h"
#include "train/sharing/update_exchange.h"
#include "train/sharing/report.h"
#include "train/async_worker.h"
#include "train/worker_state.h"

namespace gradshare::train {

struct SharingHandover;  // sharing/takeover.h

class SharingWorker : private AsyncWorker {
 public:
  SharingWorker(runtime::RunContext& context, SharingSession& session, bool replacement);

  int run();

 private:
  comm::ControlChannel& control() { return session_.control(); }

  // Runs `step`; a process failure somewhere in the job (ULFM) leads to the repair and resync
  // instead, after which the caller carries on. Returns false when that happened.
  template <typename Step>
  bool guarded(Step&& step) {
    try {
      step();
      return true;
    } catch (const comm::TransportError& error) {
      if (!session_.fault_tolerant() || !error.is_process_failure()) throw;
      if (!shutdown_code_) shutdown_code_ = shutdown_before_repair(session_);
      if (shutdown_code_) return false;  // the run is over: nothing to repair
      core::log_warn(std::string("process failure seen: ") + error.what());
      recover();
      return false;
    }
  }

  void start();

  // A replacement: the job is repaired already; take part in the resync like a survivor (a
  // failure during it is repaired and resynced in turn).
  void join();

  // Repairs the job (collective with every survivor), then the resync with the master.
  void recover();

  // Reports where this worker is, serves the master's fetches, applies what it lacked, waits
  // for the go-ahead. A replacement gets its whole start here.
  void resync();
  // What this worker would report in the resync.
  ResyncStatus status() const;
  // A repair made this worker, logical rank `former_rank` until then, the master: what it
  // brings to the role (sharing/takeover.h).
  SharingHandover handover(int former_rank) const;

  // Aggregating: the relay starts again on the repaired tree from the master's parameters;
  // what the master lacks of this subtree's training becomes this worker's to send again.
  void restart_relay(const RelayRestart& restart);

  // The parameters of another replica's whole state (the master's, or a resync's).
  void take_parameters(const ReplicaState& state);

  void adopt(const ReplacementStart& start);
  // Aggregating: the parameters the relay (re)starts from, for a lost master (RelayUpward).
  void note_relay_base();
  RelayUpward relay_upward() const;

  // This worker's state and the seq of its last update sent (a donor's reply, a checkpoint's).
  StateReply current_state();
  void send_state();

  // A checkpoint: this worker's state with the seq of its last update sent (its cut: the
  // master's parameters at the cut and this residual add up to everything it trained, nothing
  // twice; sharing/checkpoint_cut.h), sent in pieces while training goes on. Where the request
  // asked for parts, the optimizer state and residual go to this worker's part file instead
  // (part_of), and the reply names it.
  void checkpoint_state();
  // `state` with its optimizer buffers and residual moved to its part of the checkpoint at
  // `iteration`; unchanged, with a warning, when the part cannot be written.
  StateReply part_of(StateReply state, std::int64_t iteration);
  void send_state_piece();
  // The master's acknowledgements of pieces; each lets the next piece go.
  void take_state_acknowledgements();


  // Applies and relays peers' updates, notes the master's shutdown, tells the heartbeat thread
  // training goes on (or sends the heartbeat itself where there is no such thread).
  // Returns whether any update arrived.
  bool serve_peers();

  // serve_peers, and answers the master's checkpoint requests.
  bool service();

  // Aggregating (topology.aggregate): a checkpoint request pauses this worker's training for a
  // cut (sharing/aggregating_relay.h): once its marker has gone up, it takes its state, whose
  // residual holds what its link toward the master still owes too, takes in what its children
  // sent after their markers and trains on while the state goes out. The drain is a flush
  // round.
  void pause_for_checkpoint();
  // Aggregating: the state is sent once the cut is complete here.
  void send_state_after_marker();
  bool in_flush_round() const;
  bool held_by_flush() const;
  // Serves peers until held_by_flush() no longer holds; the worker's own training then counts
  // among its relay's sources again.
  void wait_for_flush();
  // Before a step: neither a flush round nor the staleness bound holds this worker.
  void wait_until_free();
  double now() const { return relay_clock_.seconds(); }

  // The next partition from the master, or nothing when every partition has been handed out.
  std::optional<runtime::PartitionGrant> next_grant();

  void train_partition(const runtime::PartitionGrant& grant);

  // Encodes this step's update and sends it, or leaves it in the residual (back-pressure) when
  // the links lack room for the message it would be (a bound from what fires now).
  void share_update(const runtime::PartitionGrant& grant);

  // Encodes `update` against the residual and publishes it, stamped with this worker's clock.
  void share(std::span<const float> update, std::uint32_t epoch, std::uint32_t flags);

  // After a divergence: keep serving until the master's shutdown.
  int await_shutdown();

  // The staleness bound (staleness.h): before the next step, wait while a training peer's
  // updates lag more than encoding.max_staleness steps behind this worker's clock. Waiting, it
  // keeps applying and relaying, and sends the steps its residual still holds (back-pressure),
  // so that peers waiting on this worker see its clock move.
  void wait_for_peers();

  // A worker that was idle (no partition) starts again level with the slowest training peer,
  // so that its own clock does not hold the others back.
  void resume_clock();

  // No partition left to train: tell the peers (a message flagged idle, carrying what the
  // residual holds above tau) so that the staleness bound stops waiting on this worker.
  void announce_idle();

  std::span<const float> zeros();

  void record_step(const StepResult& result);

  void send_report();

  // Drain: tell the master how many updates this worker sent, then keep applying and relaying
  // until every replica's updates have arrived here; then wait for the end of the job. A
  // recovery on the way sends this worker back to asking for partitions.
  int finish();

  bool drained() const;

  core::RuntimeError drain_timeout() const;

  SharingSession& session_;
  codec::Encoder encoder_;
  UpdateExchange exchange_;
  float update_scale_;
  std::vector<runtime::PartitionGrant> read_ahead_;  // reserved for the next requests (last grant)
  std::vector<std::uint8_t> message_;
  // encoding.momentum: mask; empty otherwise.
  std::optional<MomentumMask> momentum_mask_;
  // Aggregating: the replica's parameters when its relay last (re)started (sharing/takeover.h).
  std::vector<float> relay_base_;

  // encoding.check_conservation: every update summed, and every quantum this worker sent.
  bool check_conservation_;
  std::vector<double> update_sum_;
  std::vector<float> sent_sum_;
  double conservation_error_ = -1;

  SharingReport report_;
  ExchangeStats reported_exchange_;
  core::Stopwatch report_clock_;
  double cpu_start_ = core::process_cpu_seconds();  // beside report_clock_: the same span
  core::Stopwatch heartbeat_clock_;
  double heartbeat_period_;
  double timeout_;

  // Where this worker is, for the resync after a failure.
  WorkerPhase phase_;
  std::optional<runtime::PartitionGrant> holding_;
  std::optional<runtime::PartitionGrant> finished_unacknowledged_;
  bool request_pending_ = false;
  // The checkpoint state on its way to the master (see checkpoint_state).
  std::vector<std::uint8_t> outgoing_state_;
  std::uint64_t state_cut_seq_ = 0;
  std::uint64_t states_sent_ = 0;  // state requests answered (echoed in the acknowledgements)
  std::size_t piece_bytes_ = 0;
  std::uint32_t pieces_ = 0, pieces_sent_ = 0, pieces_acknowledged_ = 0;
  std::optional<std::vector<std::uint64_t>> drain_targets_;
  std::uint64_t drain_round_ = 0;       // aggregating: the flush round that drains
  std::uint64_t checkpoint_cut_ = 0;    // aggregating: the cut of the newest checkpoint
  bool state_owed_ = false;             // aggregating: asked, not sent (the marker first)
  CheckpointRequest checkpoint_request_;  // the newest
  core::Stopwatch relay_clock_;         // aggregating: the relay's clock (its waits)
  bool drained_sent_ = false;
  std::uint64_t seq_ = 0;
  std::int64_t steps_ = 0;
  std::int64_t trained_of_held_ = 0;  // minibatches of holding_ trained so far

  // The staleness bound: this worker's clock (steps, a replacement continuing the dead rank's),
  // the clock of its newest sent update, and the peers' clocks.
  StalenessTracker staleness_;
  std::int64_t clock_ = 0;
  std::int64_t sent_clock_ = 0;
  bool was_idle_ = false;
  std::optional<int> shutdown_code_;  // the master's Shutdown, whenever it came
  std::uint32_t current_epoch_ = 0;
  std::vector<float> zeros_;
  // Last, so that it stops before anything it uses goes (ft/heartbeat.h).
  std::optional<ft::HeartbeatThread> heartbeat_;
};

}  // namespace gradshare::train
