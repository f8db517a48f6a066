// sharing/master.h: the gradient-sharing master (see sharing/protocol.h): hands out
// partitions, applies and relays every update, aggregates the workers' figures, evaluates each
// finished epoch, drains the job and checks that every replica ended with the master's model;
// under fault tolerance it leads the repair and resync after a worker fails. Its methods live
// in master.cpp (the loop and messages), master_checkpoint.cpp, master_recovery.cpp and
// master_summary.cpp.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ft/liveness.h"
#include "ft/recovery_report.h"
#include "comm/byte_io.h"
#include "comm/transport_error.h"
#include "core/cpu_time.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "runtime/checkpointer.h"
#include "runtime/divergence_guard.h"
#include "train/master_base.h"
#include "train/sharing/checkpoint_collection.h"
#include "train/sharing/drain.h"
#include "train/sharing/encoding_debug.h"
#include "runtime/epoch_report.h"
#include "train/sharing/gradient_sharing.h"
#include "runtime/model_file.h"
#include "train/normalization_message.h"
#include "runtime/partition_data.h"
#include "train/partition_messages.h"
#include "runtime/partition_scheduler.h"
#include "runtime/peak_memory.h"
#include "report/progress.h"
#include "runtime/poll_during.h"
#include "runtime/progress_window.h"
#include "train/sharing/protocol.h"
#include "train/sharing/recovery.h"
#include "train/sharing/roles.h"
#include "train/sharing/staleness.h"
#include "train/sharing/takeover.h"
#include "train/sharing/update_exchange.h"
#include "train/sharing/update_resync.h"
#include "train/sharing/report.h"
#include "train/worker_state.h"

namespace gradshare::train {

// The periodic progress line: training figures over all workers since the previous line.
class SharingProgress {
 public:
  SharingProgress(runtime::RunContext& context, std::int64_t steps_per_epoch,
                  std::size_t parameter_count, std::int64_t first_step)
      : context_(context),
        dense_bytes_(4.0 * static_cast<double>(parameter_count)),
        window_(context, steps_per_epoch, context.worker_count(), first_step) {}

  void add(const SharingReport& report) { window_.add(report); }
  // Steps of the whole run, those before a resume included.
  std::int64_t steps() const { return window_.step(); }
  const SharingReport& total() const { return window_.total(); }

  void maybe_log(double relayed_by_master) {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double bytes_per_step =
        runtime::ratio(static_cast<double>(w.bytes), static_cast<double>(w.steps));
    const double dense_ratio = runtime::ratio(dense_bytes_, bytes_per_step);
    const double sparsity = runtime::ratio(w.sparsity_sum, static_cast<double>(w.messages));
    char line[640];
    std::snprintf(
        line, sizeof line,
        "%s  tau %.2e..%.2e  sparsity %.2e  enc s/b/c %lld/%lld/%lld  "
        "%.0f B/worker/step (dense/%.0f)  relayed %.0f  back-pressure %lld  capped %lld  "
        "stale %.1f/%lld  waited %.2fs  %s",
        window_.head().c_str(), w.tau_min, w.tau_max, sparsity,
        static_cast<long long>(w.sparse_messages), static_cast<long long>(w.bitmap_messages),
        static_cast<long long>(w.compressed_messages), bytes_per_step, dense_ratio,
        relayed_by_master + static_cast<double>(w.relayed), static_cast<long long>(w.backpressure),
        static_cast<long long>(w.capped_messages), w.staleness.mean(),
        static_cast<long long>(w.staleness.max), w.staleness.wait_seconds, window_.eta().c_str());
    core::log_progress(line);
    context_.metrics.write(window_.record()
                               .add("tau_min", static_cast<double>(w.tau_min))
                               .add("tau_max", static_cast<double>(w.tau_max))
                               .add("sparsity", sparsity)
                               .add("sparse_messages", w.sparse_messages)
                               .add("bitmap_messages", w.bitmap_messages)
                               .add("compressed_messages", w.compressed_messages)
                               .add("bytes_per_worker_step", bytes_per_step)
                               .add("dense_ratio", dense_ratio)
                               .add("backpressure", w.backpressure)
                               .add("capped_messages", w.capped_messages)
                               .add("staleness_mean", w.staleness.mean())
                               .add("staleness_max", w.staleness.max)
                               .add("staleness_wait_seconds", w.staleness.wait_seconds)
                               .add("duplicates", w.duplicates));
    window_.next_window();
  }

 private:
  runtime::RunContext& context_;
  double dense_bytes_;
  runtime::ProgressWindow<SharingReport> window_;
};

// A MasterBase (train/master_base.h): the loop polls the data plane and the control channel in
// turn; a process failure under ULFM is repaired in recover() and the loop goes on.
class SharingMaster : public MasterBase {
 public:
  SharingMaster(runtime::RunContext& context, SharingSession& session);

  int run();
  // A new master inside the job (sharing/takeover.h): `handover` from the worker this process
  // was, nothing for a spare.
  int take_over(std::optional<SharingHandover> handover);

  void on_stop_signal() override;
  std::optional<int> handle(const comm::ControlMessage& message) override;
  // Relays updates, evaluates finished epochs, starts checkpoints and the drain, watches
  // liveness.
  bool poll() override;
  std::optional<int> finished() override;
  bool recover(const comm::TransportError& error) override;
  std::string awaited() const override;

 private:
  // Applies and relays what arrived; aggregating (topology.aggregate), also sends each link what
  // is due, its flush rounds' finals included. Returns the messages received.
  std::size_t relay();

  // From the start (or a takeover) to the end of the run: the loop, then end_run.
  int run_from(std::int64_t first_step);

  // A process failed: repair the job (comm/repair.h), then the resync (sharing/recovery.h).
  void repair_and_resync(const std::string& cause);

  // The takeover's work with the workers (sharing/takeover.h), again from the start if
  // another process fails meanwhile.
  void adopt_run(const std::optional<SharingHandover>& handover, const RunSoFar& so_far,
                 ft::RecoveryRecord& record);
  // The model a new master starts from: the handover's replica, or the fullest survivor's;
  // aggregating, the lost master's children's upward sums (adopt_aggregated_model).
  void adopt_model(const std::optional<SharingHandover>& handover,
                   const std::map<int, ResyncStatus>& status);
  void adopt_aggregated_model(const std::optional<SharingHandover>& handover,
                              const std::map<int, ResyncStatus>& status);
  // The schedule a new master goes on with: the epochs metrics.jsonl records as evaluated, then
  // every partition the newest checkpoint or a worker (the handover's included) knows done.
  runtime::DataPosition rebuilt_position(const RunSoFar& so_far,
                                         const std::map<int, ResyncStatus>& status,
                                         const std::optional<SharingHandover>& handover) const;

  // `worker` finished its partition; its updates up to `last_seq` carry the training. Kept
  // until they are applied here, for reopen_lost_partitions.
  void finish_partition(int worker, std::uint64_t last_seq);

  // After the resync: a partition a lost worker finished whose updates reached no survivor
  // was not trained as far as the model knows: it is trained again.
  void reopen_lost_partitions(const std::vector<int>& lost);

  // A dead worker: its partition goes back to the queue; the minibatches of it that already
  // produced updates will be trained again (counted, not hidden).
  void forget_worker(int worker, ft::RecoveryRecord& record);

  void resync(ft::RecoveryRecord& record);
  // Its steps: every live worker's status; the schedule reconciled with what the survivors
  // hold; then the updates, the go-ahead and the replacements' start.
  std::map<int, ResyncStatus> collect_statuses();
  void reconcile_schedule(const std::map<int, ResyncStatus>& status);
  void finish_resync(const std::map<int, ResyncStatus>& status, ft::RecoveryRecord& record);
  // Aggregating: what the survivors' old parents (ResyncStatus::relay_parent) took in, for
  // their RelayRestart (the master's own relay starts again first), and the lost ranks' relay
  // residuals named in the log.
  void restart_relays(const std::map<int, ResyncStatus>& survivors, const std::vector<int>& lost);

  static bool same(const runtime::PartitionGrant& a, const runtime::PartitionGrant& b);

  // A replacement starts from the master's model and applied IDs, and the optimizer state of
  // live worker `donor` (the master does not train; none: a fresh optimizer); its residual
  // starts empty.
  void start_replacement(int worker, int donor, const std::optional<WorkerState>& donor_state);

  // Every worker first gets the model to start from: fresh, or the resumed checkpoint's.
  void start_workers(const std::optional<ckpt::Checkpoint>& resume);

  // One residual per worker of this run from a checkpoint's: a checkpoint of more workers has
  // the extra residuals added to this run's workers in turn, so no quantum is dropped.
  std::vector<std::vector<float>> split_residuals(const ckpt::Checkpoint& checkpoint) const;

  // Checkpoints need what only workers have (optimizer state, thresholds, residuals): ask
  // every worker, starting a cut of the master's parameters (sharing/checkpoint_collection.h);
  // the checkpoint is written once the cut is complete. Workers never stop training for it,
  // except aggregating, where they pause for the flush round that cuts (checkpoint_cut.h).
  void request_checkpoint();
  void request_checkpoint_now();

  // Waits for every worker's reply to the outstanding request (made here if none is).
  std::map<int, StateReply> fetch_worker_states();

  // Relays until every update each worker sent before its reply has been applied here.
  void complete_cut();

  // Writes the checkpoint once every reply is in and the cut complete.
  void write_checkpoint_if_complete();

  // A part a worker wrote that the master does not see: the worker and the part.
  std::optional<std::pair<int, std::string>> unseen_part(
      const std::map<int, StateReply>& workers) const;
  // Parameters from `model`, `iteration`, `position`, `version_vector`, thresholds; every
  // worker's optimizer state and residual, inline or, once any worker wrote its part, in parts
  // (the master writing those of states sent whole). Inline, the single optimizer state, for
  // older readers, is the first worker's; a reader of parts takes worker 0's.
  ckpt::Checkpoint checkpoint_of(const nn::Model& model, std::int64_t iteration,
                                 const runtime::DataPosition& position,
                                 std::vector<std::uint64_t> version_vector,
                                 const std::map<int, StateReply>& workers);

  // The checkpoint at the cut (complete_cut first), written while relaying goes on.
  void write_checkpoint(const std::map<int, StateReply>& workers);

  // Evaluations and checkpoint writes (no MPI, nothing that touches model_) run while this
  // thread keeps relaying: a master that stopped relaying would hold every worker at the bound.
  void relay_during(const std::function<void()>& work);

  // One line naming the worker, the step and the likely cause; the run then ends.
  void report_divergence(int worker, const Diverged& diverged);

  // After the loop: the stop checkpoint, the workers' shutdown, the checks and summaries,
  // model.h5.
  int end_run(int exit_code, double cpu_seconds, double wall_seconds);

  bool check_equivalence();

  void summarize(double cpu_seconds, double wall_seconds, bool equivalent);

  // Message copies each replica forwarded: a record per rank, and a line with the master's and
  // the busiest worker's (the load a tree spreads over its inner nodes).
  void summarize_relays();

  // The staleness distribution over the run and the time each worker was held by the bound.
  void summarize_staleness(const SharingReport& total, report::JsonLine& record);

  SharingSession& session_;
  UpdateExchange exchange_;
  data::EpochPlan shape_;
  ft::RecoveryLog recoveries_;
  std::vector<int> live_;  // logical ranks of the live workers
  ft::Liveness liveness_;
  core::Stopwatch liveness_clock_;  // since heartbeats were last read
  double liveness_period_ =
      static_cast<double>(cfg_.fault_tolerance.heartbeat_ms) / 1000.0 / 4.0;
  std::map<int, std::uint64_t> grant_seq_;  // a worker's last update seq when granted
  std::optional<runtime::PartitionScheduler> scheduler_;
  std::optional<SharingProgress> progress_;
  SharingDrain drain_;
  std::vector<float> tau_;                   // latest threshold per worker (index worker - 1)
  std::map<int, SharingReport> per_worker_;  // each worker's reports summed (staleness summary)
  // The newest clock (training step) applied from each origin: a replacement continues it.
  std::vector<std::uint64_t> clocks_ =
      std::vector<std::uint64_t>(static_cast<std::size_t>(context_.size), 0);
  // The run's step when this master took a lost one's place (sharing/takeover.h): its summary
  // counts from there.
  std::optional<std::int64_t> took_over_at_;
  // Aggregating: relays restarted in the recovery under way (restart_relays). A failure then
  // cannot be repaired: the old parents' applied IDs are gone (the job ends; it resumes from its
  // newest checkpoint).
  bool relays_restarted_ = false;
  // Aggregating, while this master takes a lost one's place: the lost master's children owe
  // nothing (their upward sums made its parameters); a promoted worker's children learn what it
  // had taken in of theirs from its status (restart_relays).
  struct LostMasterRelays {
    int former_rank = -1;  // the promoted worker's rank, -1 for a spare
    AppliedIds former_applied;
  };
  std::optional<LostMasterRelays> lost_master_relays_;
  CheckpointCollection checkpoint_;  // the checkpoint being collected
  // Partitions each worker finished whose updates (up to the seq) are not all applied here yet.
  std::map<int, std::vector<std::pair<runtime::PartitionGrant, std::uint64_t>>>
      finished_unconfirmed_;
  double conservation_error_ = -1;  // worst worker's; -1 when not checked
  double equivalence_difference_ = 0;
  nn::Model snapshot_ = runtime::build_model(cfg_);  // evaluated while model_ moves on
  double evaluation_cpu_ = 0;  // CPU seconds spent evaluating finished epochs
  core::Stopwatch clock_;      // the aggregating relay's clock (its waits)
};

}  // namespace gradshare::train
