// sharing/master.cpp: the gradient-sharing master: hands out partitions, applies and relays
// every update, aggregates the workers' figures, evaluates each finished epoch, drains the job
// and checks that every replica ended with the master's model; under fault tolerance it leads
// the repair and resync after a worker fails (sharing_recovery.h).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/byte_io.h"
#include "comm/mpi_error.h"
#include "core/cpu_time.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/sharing/encoding_debug.h"
#include "train/epoch_report.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/liveness.h"
#include "train/model_file.h"
#include "train/normalization_message.h"
#include "train/partition_messages.h"
#include "train/partition_scheduler.h"
#include "train/peak_memory.h"
#include "train/progress.h"
#include "train/poll_during.h"
#include "train/progress_window.h"
#include "train/sharing/protocol.h"
#include "train/sharing/recovery.h"
#include "train/sharing/roles.h"
#include "train/sharing/staleness.h"
#include "train/recovery_report.h"
#include "train/sharing/update_exchange.h"
#include "train/sharing/update_resync.h"
#include "train/sharing/worker_report.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// The periodic progress line: training figures over all workers since the previous line.
class SharingProgress {
 public:
  SharingProgress(RunContext& context, std::int64_t steps_per_epoch, std::size_t parameter_count,
                  std::int64_t first_step)
      : context_(context), dense_bytes_(4.0 * static_cast<double>(parameter_count)),
        window_(context, steps_per_epoch, context.worker_count(), first_step) {}

  void add(const WorkerReport& report) { window_.add(report); }
  // Steps of the whole run, those before a resume included.
  std::int64_t steps() const { return window_.step(); }
  const WorkerReport& total() const { return window_.total(); }

  void maybe_log(double relayed_by_master) {
    if (!window_.due()) return;
    const auto& w = window_.window();
    const double bytes_per_step = ratio(static_cast<double>(w.bytes), static_cast<double>(w.steps));
    const double dense_ratio = ratio(dense_bytes_, bytes_per_step);
    const double sparsity = ratio(w.sparsity_sum, static_cast<double>(w.messages));
    char line[640];
    std::snprintf(line, sizeof line,
                  "%s  tau %.2e..%.2e  sparsity %.2e  enc s/b/c %lld/%lld/%lld  "
                  "%.0f B/worker/step (dense/%.0f)  relayed %.0f  back-pressure %lld  capped %lld  "
                  "stale %.1f/%lld  waited %.2fs  %s",
                  window_.head().c_str(), w.tau_min, w.tau_max, sparsity,
                  static_cast<long long>(w.sparse_messages),
                  static_cast<long long>(w.bitmap_messages),
                  static_cast<long long>(w.compressed_messages), bytes_per_step, dense_ratio,
                  relayed_by_master + static_cast<double>(w.relayed),
                  static_cast<long long>(w.backpressure), static_cast<long long>(w.capped_messages),
                  w.staleness.mean(), static_cast<long long>(w.staleness.max),
                  w.staleness.wait_seconds,
                  window_.eta().c_str());
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
  RunContext& context_;
  double dense_bytes_;
  ProgressWindow<WorkerReport> window_;
};

// The master's state and its reactions to the workers' messages.
class SharingMaster {
 public:
  SharingMaster(RunContext& context, SharingSession& session)
      : context_(context), cfg_(context.config), session_(session),
        model_(nn::Model::build(cfg_.model, static_cast<std::uint64_t>(cfg_.run.seed))),
        exchange_(session.plane(), 0, context.size, model_.parameter_count(),
                  static_cast<std::size_t>(context.config.fault_tolerance.keep_bytes)),
        shape_(context.data.train.size(), static_cast<std::size_t>(cfg_.training.batch_size),
               static_cast<std::size_t>(cfg_.data.partition_batches),
               static_cast<std::uint64_t>(cfg_.run.seed), 0, false),
        checkpointer_(context), reporter_(context), recoveries_(context),
        live_(session.live_workers()), liveness_(context.config.fault_tolerance.timeout_ms),
        targets_(static_cast<std::size_t>(context.size), 0),
        tau_(static_cast<std::size_t>(context.worker_count()),
             static_cast<float>(cfg_.encoding.initial_threshold)) {
    exchange_.on_applied([this](const codec::MessageHeader& header) {
      auto& clock = clocks_[header.origin];
      clock = std::max(clock, header.iteration);
    });
  }

  int run() {
    core::log_info("model: " + std::to_string(model_.parameter_count()) + " parameters\n" +
                   model_.summary());
    const auto resume = Checkpointer::find_resume(context_);
    // The checkpoint resumed from is the newest: none is due until every_steps after it.
    if (resume) checkpointer_.mark_written(resume->iteration);
    start_workers(resume);
    const auto steps_per_epoch = static_cast<std::int64_t>(shape_.batch_count());
    progress_.emplace(context_, steps_per_epoch, model_.parameter_count(),
                      resume ? resume->iteration : 0);
    const double cpu_start = core::process_cpu_seconds();
    core::Stopwatch wall;
    core::Backoff backoff;
    while (!finished() && !diverged_) {
      bool busy = false;
      try {
        busy = step();
      } catch (const comm::MpiError& error) {
        if (!session_.fault_tolerant() || !error.is_process_failure()) throw;
        recover(error.what());
        busy = true;
      }
      if (busy) backoff.reset(); else backoff.wait();
    }
    const int exit_code =
        diverged_ ? core::kExitDiverged : stopping_ ? core::kExitRequeue : core::kExitOk;
    if (stopping_ && !diverged_) write_checkpoint(fetch_worker_states());
    for (int w : live_) send(control(), w, Shutdown{exit_code});
    control().flush();
    session_.release_spares();
    // A diverged model is never saved: the newest checkpoint stays the newest good one.
    if (diverged_) return exit_code;
    const bool equivalent = check_equivalence();
    summarize(core::process_cpu_seconds() - cpu_start, wall.seconds(), equivalent);
    recoveries_.summarize();
    summarize_relays();
    peak_memory_.summarize(context_);
    if (stopping_) return exit_code;
    ckpt::write_checkpoint(context_.run_directory.file("model.h5"), checkpoint_now({}));
    reporter_.finish(model_);
    if (!equivalent) throw core::RuntimeError("replicas diverged: model-equivalence check failed");
    return exit_code;
  }

 private:
  comm::ControlChannel& control() { return session_.control(); }

  // One pass of the master's loop; true when something happened.
  bool step() {
    bool busy = exchange_.poll(model_.parameters()) > 0;
    while (auto message = control().try_receive()) {
      busy = true;
      liveness_.heard(message->source);
      handle(*message);
    }
    for (const auto epoch : scheduler_->take_completed_epochs()) {
      const double cpu_before = core::process_cpu_seconds();
      std::copy(model_.parameters().begin(), model_.parameters().end(),
                snapshot_.parameters().begin());
      const auto minibatches = scheduler_->minibatches_in(epoch);
      relay_during([&] { reporter_.end_of_epoch(snapshot_, epoch + 1, progress_->steps(), minibatches); });
      evaluation_cpu_ += core::process_cpu_seconds() - cpu_before;
      if (checkpointer_.at_epoch_end()) request_checkpoint();
    }
    if (checkpointer_.due(progress_->steps())) request_checkpoint();
    if (core::stop_requested() && !stopping_) {
      log_stop_request("finishing the partitions in flight before the stop checkpoint", true);
      stopping_ = true;
    }
    progress_->maybe_log(static_cast<double>(exchange_.stats().relayed));
    if (static_cast<std::size_t>(done_.size()) == live_.size() && !drain_sent_) send_drain_targets();
    liveness_.check(live_, session_);
    return busy;
  }

  // A process failed: repair the job (comm/repair.h), then the resync (sharing_recovery.h).
  void recover(const std::string& cause) {
    core::log_warn("process failure: " + cause + "; recovering");
    core::Stopwatch clock;
    const auto before = live_;
    for (;;) {
      try {
        auto job = session_.repair(join_info());
        exchange_.attach(session_.plane());
        live_ = session_.live_workers();
        RecoveryRecord record;
        record.lost = job.lost;
        record.replaced = job.replaced;
        record.rounds = job.rounds;
        record.tree_version = session_.tree().version;
        for (int w : job.lost) forget_worker(w, record);
        resync(record);
        record.seconds = clock.seconds();
        recoveries_.add(record);
        break;
      } catch (const comm::MpiError& error) {
        if (!error.is_process_failure()) throw;
        core::log_warn(std::string("another process failed during recovery: ") + error.what());
      }
    }
    liveness_.restart(live_);
    if (cfg_.fault_tolerance.on_worker_failure == "abort" && !stopping_) {
      core::log_warn("fault_tolerance.on_worker_failure is abort: finishing the partitions in "
                     "flight, checkpointing, and exiting with the requeue code");
      stopping_ = true;
    }
  }

  // What a replacement must know to join: the run directory and the job's size.
  std::vector<std::uint8_t> join_info() const {
    comm::ByteWriter writer;
    writer.put_string(context_.run_directory.path());
    writer.put<std::int32_t>(context_.size);
    writer.put_vector(std::span<const std::uint8_t>(serialize(context_.data.normalization)));
    return {writer.bytes().begin(), writer.bytes().end()};
  }

  // `worker` finished its partition; its updates up to `last_seq` carry the training. Kept
  // until they are applied here, for reopen_lost_partitions.
  void finish_partition(int worker, std::uint64_t last_seq) {
    const auto held = scheduler_->in_flight(worker);
    scheduler_->complete(worker);
    auto& unconfirmed = finished_unconfirmed_[worker];
    if (held) unconfirmed.push_back({*held, last_seq});
    const auto applied = exchange_.highest_applied(worker);
    std::erase_if(unconfirmed, [&](const auto& finished) { return finished.second <= applied; });
  }

  // After the resync: a partition a lost worker finished whose updates reached no survivor
  // was not trained as far as the model knows: it is trained again.
  void reopen_lost_partitions(const std::vector<int>& lost) {
    for (int worker : lost) {
      const auto applied = exchange_.highest_applied(worker);
      for (const auto& [grant, last_seq] : finished_unconfirmed_[worker]) {
        if (last_seq <= applied) continue;
        const bool reopened = scheduler_->reopen(grant);
        core::log_warn("partition " + std::to_string(grant.partition) + " of epoch " +
                       std::to_string(grant.epoch + 1) + ", finished by lost rank " +
                       std::to_string(worker) + ": its updates after seq " + std::to_string(applied) +
                       " (up to " + std::to_string(last_seq) + ") reached no survivor; " +
                       (reopened ? "trained again" : "its epoch was complete already, so they are lost"));
      }
      finished_unconfirmed_.erase(worker);
    }
  }

  // A dead worker: its partition goes back to the queue; the minibatches of it that already
  // produced updates will be trained again (counted, not hidden).
  void forget_worker(int worker, RecoveryRecord& record) {
    const auto held = scheduler_->in_flight(worker);
    if (held) {
      const auto seen = exchange_.highest_applied(worker);
      const auto since = grant_seq_[worker];
      record.retrained_minibatches += static_cast<std::int64_t>(seen > since ? seen - since : 0);
    }
    scheduler_->requeue_worker(worker);  // its partition and its reservations
    done_.erase(worker);
    drained_.erase(worker);
    applied_twice_.erase(worker);
  }

  void resync(RecoveryRecord& record) {
    std::map<int, WorkerStatus> status;
    for (int w : live_)
      status[w] = receive<WorkerStatus>(control(), w, "its status after the repair");
    std::vector<int> joining;
    for (auto& [w, s] : status) {
      if (s.phase == WorkerPhase::kJoining) {
        joining.push_back(w);
        continue;
      }
      const auto held = scheduler_->in_flight(w);
      if (held && s.finished && same(*held, *s.finished)) scheduler_->complete(w);
      else if (held && !(s.holding && same(*held, *s.holding))) scheduler_->requeue_worker(w);
      if (s.phase != WorkerPhase::kTraining) scheduler_->requeue_worker(w);  // holds nothing
    }
    std::map<int, WorkerStatus> survivors;
    for (const auto& [w, s] : status)
      if (s.phase != WorkerPhase::kJoining) survivors.emplace(w, s);
    const auto moved = resync_updates(control(), exchange_, model_.parameters(), survivors);
    record.resync_updates += moved.updates;
    record.resync_whole_states += moved.whole_states;
    reopen_lost_partitions(record.lost);
    for (int w : joining) start_replacement(w, status);
    for (int w : live_) send(control(), w, ResyncDone{});
    // Every worker asks for partitions again and reports kDone anew; the drain restarts.
    done_.clear();
    drained_.clear();
    applied_twice_.clear();
    drain_sent_ = false;
    if (checkpoint_requested_) {
      checkpoint_requested_ = false;
      state_replies_.clear();
      request_checkpoint();
    }
  }

  static bool same(const PartitionGrant& a, const PartitionGrant& b) {
    return a.epoch == b.epoch && a.partition == b.partition;
  }

  // A replacement starts from the master's model and applied IDs, and the optimizer state of a
  // live worker (the master does not train); its residual starts empty.
  void start_replacement(int worker, const std::map<int, WorkerStatus>& status) {
    ReplacementStart start;
    start.replica = {{model_.parameters().begin(), model_.parameters().end()},
                     exchange_.applied_ids()};
    start.clock = clocks_[static_cast<std::size_t>(worker)];
    int donor = -1;
    for (const auto& [w, s] : status)
      if (s.phase != WorkerPhase::kJoining) donor = w;
    if (donor > 0) {
      send(control(), donor, StateRequest{});
      start.worker =
          receive<StateReply>(control(), donor, "optimizer state for a replacement").state;
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

  // Every worker first gets the model to start from: fresh, or the resumed checkpoint's.
  void start_workers(const std::optional<ckpt::Checkpoint>& resume) {
    StartState start;
    DataPosition position;
    if (resume) {
      restore_checkpoint(*resume, "checkpoint", model_, nullptr);
      position = data_position(*resume);
      start.resume = true;
      start.parameters.assign(model_.parameters().begin(), model_.parameters().end());
      for (std::size_t w = 0; w < tau_.size() && !resume->thresholds.empty(); ++w)
        tau_[w] = resume->thresholds[std::min(w, resume->thresholds.size() - 1)];
      if (static_cast<std::int64_t>(resume->world_size) != context_.size)
        core::log_info("resuming a " + std::to_string(resume->world_size) + "-rank run with " +
                       std::to_string(context_.size) + " ranks: every worker starts from the " +
                       "checkpoint's model; worker w from saved worker w's optimizer state (w " +
                       "modulo the saved workers)");
    }
    scheduler_.emplace(cfg_.training.epochs, static_cast<std::int64_t>(shape_.partition_count()),
                       position, shape_.partition_sizes(), cfg_.data.prefetch_partitions);
    const auto residuals = resume ? split_residuals(*resume) : std::vector<std::vector<float>>{};
    for (int w : live_) {
      if (resume) {
        const auto optimizer = ckpt::optimizer_for_worker(*resume, static_cast<std::size_t>(w - 1));
        start.worker.optimizer_step = optimizer.step;
        start.worker.optimizer_state = optimizer.buffers;
      }
      start.worker.tau = tau_[static_cast<std::size_t>(w - 1)];
      start.worker.residual =
          residuals.empty() ? std::vector<float>{} : residuals[static_cast<std::size_t>(w - 1)];
      send(control(), w, Start{0, start});
    }
    liveness_.restart(live_);
  }

  // One residual per worker of this run from a checkpoint's: a checkpoint of more workers has
  // the extra residuals added to this run's workers in turn, so no quantum is dropped.
  std::vector<std::vector<float>> split_residuals(const ckpt::Checkpoint& checkpoint) const {
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

  void handle(const comm::ControlMessage& message) {
    const int worker = message.source;
    switch (message.tag) {
      case PartitionRequest::kTag: {
        const auto request = decode<PartitionRequest>(message);
        if (request.finished_previous) finish_partition(worker, request.last_seq);
        grant_seq_[worker] = exchange_.highest_applied(worker);
        send(control(), worker,
             PartitionGrantReply{stopping_ || reporter_.stop_early() ? PartitionAssignment{}
                                                                      : scheduler_->assign(worker)});
        break;
      }
      case Diverged::kTag: {
        const auto diverged = decode<Diverged>(message);
        if (!diverged_) report_divergence(worker, diverged.step, diverged.reason);
        break;
      }
      case Heartbeat::kTag:
        break;
      case WorkerReport::kTag: {
        const auto report = decode<WorkerReport>(message);
        if (report.steps > 0) tau_[static_cast<std::size_t>(worker - 1)] = report.tau_max;
        progress_->add(report);
        per_worker_[worker].add(report);
        if (cfg_.logging.encoding_debug)
          context_.metrics.write(encoding_debug_record(worker, progress_->steps(), report));
        core::log_debug("rank " + std::to_string(worker) + ": staleness mean " +
                        std::to_string(report.staleness.mean()) + " max " +
                        std::to_string(report.staleness.max) + ", held by the bound " +
                        std::to_string(report.staleness.wait_seconds) + " s");
        break;
      }
      case StateReply::kTag:
        state_replies_[worker] = decode<StateReply>(message);
        if (state_replies_.size() == live_.size())
          write_checkpoint(fetch_worker_states());
        break;
      case SharingDone::kTag: {
        const auto done = decode<SharingDone>(message);
        targets_[static_cast<std::size_t>(worker)] = done.last_seq;
        conservation_error_ = std::max(conservation_error_, done.conservation_error);
        peak_memory_.add(worker, done.peak_bytes);
        done_.insert(worker);
        break;
      }
      case DrainedReport::kTag: {
        auto report = decode<DrainedReport>(message);
        applied_twice_[worker] = report.applied_twice;
        drained_[worker] = std::move(report.parameters);
        relays_[worker] = {report.published, report.relayed, report.links, report.bytes_published,
                           report.transport, report.cpu_seconds};
        break;
      }
      default:
        throw core::RuntimeError("unexpected " + std::string(comm::tag_name(message.tag)) +
                                 " message from rank " + std::to_string(worker));
    }
  }

  // Checkpoints need what only workers have (optimizer state, thresholds, residuals): ask
  // every worker; the checkpoint is written once all have replied.
  void request_checkpoint() {
    if (checkpoint_requested_ || drain_sent_) return;
    request_checkpoint_now();
  }

  // Waits for every worker's reply to the outstanding request (made here if none is).
  std::map<int, StateReply> fetch_worker_states() {
    if (!checkpoint_requested_) request_checkpoint_now();
    for (int w : live_)
      if (!state_replies_.count(w))
        state_replies_[w] = receive<StateReply>(control(), w, "worker state for the checkpoint");
    checkpoint_requested_ = false;
    std::map<int, StateReply> replies;
    replies.swap(state_replies_);
    return replies;
  }

  // Relays until every update a worker sent before its state reply has been applied here (the
  // workers send nothing new meanwhile): then parameters plus saved residuals are exactly what
  // was trained.
  void apply_updates_sent_before(const std::map<int, StateReply>& replies) {
    core::Deadline deadline(control().timeout_seconds());
    core::Backoff backoff;
    for (;;) {
      int behind = -1;
      for (const auto& [worker, reply] : replies)
        if (exchange_.highest_applied(worker) < reply.sent_seq) behind = worker;
      if (behind < 0) return;
      if (deadline.expired())
        throw core::RuntimeError("timed out waiting for rank " + std::to_string(behind) +
                                 "'s updates before a checkpoint (applied up to seq " +
                                 std::to_string(exchange_.highest_applied(behind)) + " of " +
                                 std::to_string(replies.at(behind).sent_seq) + ")");
      if (exchange_.poll(model_.parameters()) > 0) backoff.reset(); else backoff.wait();
    }
  }

  void request_checkpoint_now() {
    for (int w : live_) send(control(), w, StateRequest{});
    checkpoint_requested_ = true;
  }

  // Parameters, position, version vector and thresholds from here; every worker's optimizer
  // state and residual (the single optimizer state, for older readers, is the first worker's).
  ckpt::Checkpoint checkpoint_now(const std::map<int, StateReply>& workers) {
    auto c = make_checkpoint(context_, model_, nullptr, progress_->steps(), scheduler_->position());
    if (!workers.empty()) {
      const auto& first = workers.begin()->second.state;
      c.optimizer_step = first.optimizer_step;
      c.optimizer_state = first.optimizer_state;
      for (const auto& [worker, reply] : workers) {
        const auto& state = reply.state;
        c.worker_optimizers.push_back(ckpt::OptimizerState{state.optimizer_step, state.optimizer_state});
        tau_[static_cast<std::size_t>(worker - 1)] = state.tau;
        c.residuals.insert(c.residuals.end(), state.residual.begin(), state.residual.end());
      }
    }
    c.thresholds = tau_;
    c.version_vector = exchange_.version_vector();
    return c;
  }

  // A consistent snapshot (see apply_updates_sent_before), then the paused workers go on while
  // the file is written.
  void write_checkpoint(const std::map<int, StateReply>& workers) {
    apply_updates_sent_before(workers);
    const auto checkpoint = checkpoint_now(workers);
    for (const auto& [worker, reply] : workers) send(control(), worker, StateTaken{});
    relay_during([&] { checkpointer_.write(checkpoint); });
  }

  // Evaluations and checkpoint writes (no MPI, nothing that touches model_) run while this
  // thread keeps relaying: a master that stopped relaying would hold every worker at the bound.
  void relay_during(const std::function<void()>& work) {
    poll_during(work, [&] { return exchange_.poll(model_.parameters()); });
    liveness_.master_was_busy();
  }

  // One line naming the worker, the step and the likely cause; the run then ends.
  void report_divergence(int worker, std::int64_t step, const std::string& reason) {
    diverged_ = true;
    // Stale updates are a likely cause where the bound is off, the likelier one where it is
    // loose and the updates were stale.
    const double staleness = progress_->total().staleness.mean();
    const auto bound = cfg_.encoding.max_staleness;
    const std::string rate_cause =
        learning_rate_cause(context_) + " for " + std::to_string(context_.worker_count()) +
        " workers" +
        (cfg_.encoding.combine == "sum" ? " whose updates add up (encoding.combine: sum)" : "");
    char stale[200];
    std::snprintf(stale, sizeof stale,
                  "updates applied %.1f steps stale on average with encoding.max_staleness %lld "
                  "(a bound of 2 keeps them fresh)",
                  staleness, static_cast<long long>(bound));
    const std::string cause =
        bound == 0 ? rate_cause + ", or stale updates: encoding.max_staleness 0 turns the bound "
                                  "off (2 keeps them fresh)"
        : bound > 4 && staleness > 2 ? std::string(stale)
                                     : rate_cause;
    log_divergence(context_, "on rank " + std::to_string(worker) + " at its step " +
                                 std::to_string(step) + ": " + reason,
                   cause);
  }


  // The last seq of every origin: a live worker's from its kDone, a dead one's (shrink mode)
  // the last this replica applied (every replica has the same after the resync).
  void send_drain_targets() {
    const auto applied = exchange_.applied_ids();
    for (int origin = 1; origin < context_.size; ++origin)
      if (std::find(live_.begin(), live_.end(), origin) == live_.end())
        targets_[static_cast<std::size_t>(origin)] = applied.highest(origin);
    for (int w : live_) send(control(), w, SharingDrainTarget{targets_});
    drain_sent_ = true;
  }

  // Every worker drained and every update it sent applied here.
  bool finished() const {
    if (!drain_sent_ || drained_.size() != live_.size() || exchange_.has_backlog()) return false;
    for (int origin = 1; origin < context_.size; ++origin)
      if (exchange_.version_vector()[static_cast<std::size_t>(origin)] <
          targets_[static_cast<std::size_t>(origin)])
        return false;
    return true;
  }

  bool check_equivalence() {
    double worst = 0;
    for (const auto& [worker, parameters] : drained_) {
      GS_CHECK(parameters.size() == model_.parameter_count(),
               "worker " + std::to_string(worker) + " sent a wrong-sized model");
      worst = std::max(worst, relative_max_difference(parameters, model_.parameters()));
    }
    equivalence_difference_ = worst;
    const bool equivalent = worst <= kEquivalenceTolerance;
    char line[256];
    std::snprintf(line, sizeof line,
                  "model equivalence: %d workers, max relative difference %.3e (tolerance %.0e): %s",
                  static_cast<int>(drained_.size()), worst, kEquivalenceTolerance, equivalent ? "OK" : "FAILED");
    core::log_info(line);
    return equivalent;
  }

  void summarize(double cpu_seconds, double wall_seconds, bool equivalent) {
    const auto& total = progress_->total();
    const double bytes_per_step =
        static_cast<double>(total.bytes) / std::max<double>(1, static_cast<double>(total.steps));
    const double dense = 4.0 * static_cast<double>(model_.parameter_count());
    const double cpu_share = cpu_seconds / std::max(wall_seconds, 1e-9);
    // The relay loop's share is what polling with back-off keeps low; evaluating the test set
    // after every epoch is separate work of the master.
    const double evaluation_share = evaluation_cpu_ / std::max(wall_seconds, 1e-9);
    const auto duplicates = total.duplicates + static_cast<std::int64_t>(exchange_.stats().duplicates);
    const auto rejected = total.rejected + static_cast<std::int64_t>(exchange_.stats().rejected);
    std::int64_t applied_twice = exchange_.applied_twice();
    for (const auto& [worker, count] : applied_twice_) applied_twice += count;
    char line[480];
    std::snprintf(line, sizeof line,
                  "sharing summary: %lld steps, %lld updates, %.1f bytes/worker/step = dense/%.0f, "
                  "back-pressure %lld, duplicates %lld, rejected %lld, applied twice %lld, "
                  "master CPU %.1f%% of a core (%.1f%% relaying, %.1f%% evaluating epochs)",
                  static_cast<long long>(total.steps), static_cast<long long>(total.messages),
                  bytes_per_step, bytes_per_step > 0 ? dense / bytes_per_step : 0.0,
                  static_cast<long long>(total.backpressure), static_cast<long long>(duplicates),
                  static_cast<long long>(rejected), static_cast<long long>(applied_twice),
                  100.0 * cpu_share, 100.0 * (cpu_share - evaluation_share), 100.0 * evaluation_share);
    core::log_info(line);
    JsonLine record;
    record.add("kind", "sharing_summary")
        .add("steps", total.steps)
        .add("updates", total.messages)
        .add("bytes_per_worker_step", bytes_per_step)
        .add("dense_bytes", static_cast<std::int64_t>(dense))
        .add("backpressure", total.backpressure)
        .add("duplicates", duplicates)
        .add("rejected", rejected)
        .add("applied_twice", applied_twice)
        .add("master_cpu_share", cpu_share)
        .add("master_relay_cpu_share", cpu_share - evaluation_share)
        .add("equivalence_max_relative_difference", equivalence_difference_)
        .add("equivalent", equivalent)
        .add("conservation_max_relative_error", conservation_error_)
        .add("master_kept_bytes_peak", exchange_.stats().kept_bytes_peak);
    summarize_staleness(total, record);
    context_.metrics.write(record);
  }

  // Message copies each replica forwarded: a record per rank, and a line with the master's and
  // the busiest worker's (the load a tree spreads over its inner nodes).
  void summarize_relays() {
    relays_[0] = {0, exchange_.stats().relayed, static_cast<std::int32_t>(exchange_.link_count()),
                  0, session_.plane().stats()};
    int busiest = 0;
    for (const auto& [rank, r] : relays_) {
      if (rank != 0 && (busiest == 0 || r.relayed > relays_[busiest].relayed)) busiest = rank;
      // Each worker's steps and the wall time its reports covered: the time per step that
      // `gradshare simulate --validate` compares with.
      const auto reported = per_worker_.find(rank);
      const std::int64_t steps = reported == per_worker_.end() ? 0 : reported->second.steps;
      const double seconds = reported == per_worker_.end() ? 0.0 : reported->second.seconds;
      context_.metrics.write(JsonLine()
                                 .add("kind", "relays")
                                 .add("steps", steps)
                                 .add("train_seconds", seconds)
                                 .add("cpu_seconds", r.cpu_seconds)
                                 .add("rank", rank)
                                 .add("links", r.links)
                                 .add("published", static_cast<std::int64_t>(r.published))
                                 .add("relayed", static_cast<std::int64_t>(r.relayed))
                                 .add("bytes_published", static_cast<std::int64_t>(r.bytes_published))
                                 .add("messages_sent", static_cast<std::int64_t>(r.transport.messages_sent))
                                 .add("bytes_sent", static_cast<std::int64_t>(r.transport.bytes_sent))
                                 .add("messages_received",
                                      static_cast<std::int64_t>(r.transport.messages_received))
                                 .add("bytes_received",
                                      static_cast<std::int64_t>(r.transport.bytes_received)));
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "relays: the master forwarded %llu message copies over %d links; the busiest "
                  "worker, rank %d, %llu over %d",
                  static_cast<unsigned long long>(relays_[0].relayed), relays_[0].links, busiest,
                  static_cast<unsigned long long>(relays_[busiest].relayed), relays_[busiest].links);
    core::log_info(line);
  }

  // The staleness distribution over the run and the time each worker was held by the bound.
  void summarize_staleness(const WorkerReport& total, JsonLine& record) {
    const StalenessStats& all = total.staleness;
    std::string waited;
    for (const auto& [worker, report] : per_worker_) {
      char part[64];
      std::snprintf(part, sizeof part, "%s%d %.2fs", waited.empty() ? "" : ", ", worker,
                    report.staleness.wait_seconds);
      waited += part;
      context_.metrics.write(JsonLine()
                                 .add("kind", "worker_staleness")
                                 .add("rank", static_cast<std::int64_t>(worker))
                                 .add("staleness_mean", report.staleness.mean())
                                 .add("staleness_max", report.staleness.max)
                                 .add("wait_seconds", report.staleness.wait_seconds)
                                 .add("waits", report.staleness.waits));
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "staleness (steps between an update's creation and its application): mean %.2f, "
                  "max %lld, bound %lld; ",
                  all.mean(), static_cast<long long>(all.max),
                  static_cast<long long>(cfg_.encoding.max_staleness));
    core::log_info(std::string(line) + all.histogram_text() + "; held by the bound: " +
                   (waited.empty() ? "-" : waited));
    record.add("staleness_mean", all.mean())
        .add("staleness_max", all.max)
        .add("staleness_bound", cfg_.encoding.max_staleness)
        .add("staleness_wait_seconds", all.wait_seconds)
        .add("capped_messages", total.capped_messages);
    for (std::size_t b = 0; b < StalenessStats::kBuckets; ++b)
      record.add(std::string("staleness_") + StalenessStats::bucket_name(b), all.histogram[b]);
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  SharingSession& session_;
  nn::Model model_;
  UpdateExchange exchange_;
  data::EpochPlan shape_;
  Checkpointer checkpointer_;
  EpochReporter reporter_;
  RecoveryLog recoveries_;
  std::vector<int> live_;  // logical ranks of the live workers
  Liveness liveness_;
  std::map<int, std::uint64_t> grant_seq_;     // a worker's last update seq when granted
  std::optional<PartitionScheduler> scheduler_;
  std::optional<SharingProgress> progress_;
  std::vector<std::uint64_t> targets_;  // last seq per origin, from kDone
  std::vector<float> tau_;              // latest threshold per worker (index worker - 1)
  std::map<int, std::vector<float>> drained_;
  std::set<int> done_;  // workers that reported kDone
  struct Relays {
    std::uint64_t published = 0, relayed = 0;
    std::int32_t links = 0;
    std::uint64_t bytes_published = 0;
    comm::TransportStats transport;
    double cpu_seconds = 0;  // a worker's process CPU while it trained
  };
  std::map<int, Relays> relays_;  // per drained worker (DrainedReport)
  PeakMemory peak_memory_;
  bool diverged_ = false;  // a worker's divergence guard fired: end the run, save nothing
  std::map<int, WorkerReport> per_worker_;  // each worker's reports summed (staleness summary)
  // The newest clock (training step) applied from each origin: a replacement continues it.
  std::vector<std::uint64_t> clocks_ = std::vector<std::uint64_t>(static_cast<std::size_t>(context_.size), 0);
  std::map<int, std::int64_t> applied_twice_;  // per drained worker (UpdateExchange::applied_twice)
  bool drain_sent_ = false;
  bool stopping_ = false;
  bool checkpoint_requested_ = false;
  std::map<int, StateReply> state_replies_;  // replies to the outstanding state request
  // Partitions each worker finished whose updates (up to the seq) are not all applied here yet.
  std::map<int, std::vector<std::pair<PartitionGrant, std::uint64_t>>> finished_unconfirmed_;
  double conservation_error_ = -1;  // worst worker's; -1 when not checked
  double equivalence_difference_ = 0;
  nn::Model snapshot_ = nn::Model::build(cfg_.model, static_cast<std::uint64_t>(cfg_.run.seed));  // evaluated while model_ moves on
  double evaluation_cpu_ = 0;  // CPU seconds spent evaluating finished epochs
};

}  // namespace

int run_sharing_master(RunContext& context, SharingSession& session) {
  return SharingMaster(context, session).run();
}

}  // namespace gradshare::train
