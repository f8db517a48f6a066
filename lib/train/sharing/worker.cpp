// sharing/worker.cpp: a gradient-sharing worker: trains on the partitions the master grants,
// encodes every update against its residual, keeps applying and relaying its peers' updates,
// and, under fault tolerance, takes part in the repair and resync after a process failure
// (sharing_recovery.h) and carries on where it was.
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
#include "comm/mpi_error.h"
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
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/fault_injection.h"
#include "train/partition_data.h"
#include "train/partition_messages.h"
#include "train/replica.h"
#include "train/sharing/protocol.h"
#include "train/sharing/recovery.h"
#include "train/sharing/roles.h"
#include "train/sharing/staleness.h"
#include "train/sharing/update_exchange.h"
#include "train/sharing/worker_report.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// Largest |sum of updates - (sent quanta + residual)| over the parameters, relative to the
// largest |sum of updates|: 0 up to rounding when nothing was lost. The residual clip is the
// one deliberate loss, so the check is meant for runs with encoding.residual: none.
double conservation_error(const std::vector<double>& update_sum, const std::vector<float>& sent_sum,
                          const codec::Encoder& encoder) {
  const auto residual = encoder.residual();
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < update_sum.size(); ++i) {
    worst = std::max(worst, std::fabs(update_sum[i] - (static_cast<double>(sent_sum[i]) + residual[i])));
    scale = std::max(scale, std::fabs(update_sum[i]));
  }
  const double relative = scale > 0 ? worst / scale : worst;
  core::log_info("conservation check: max |sum(updates) - sent - residual| = " +
                 std::to_string(worst) + " (relative " + std::to_string(relative) + ")");
  return relative;
}

constexpr int kBoundBackoffMicroseconds = 100;

void count_encoding(WorkerReport& report, codec::Encoding encoding) {
  switch (encoding) {
    case codec::Encoding::kSparse: ++report.sparse_messages; break;
    case codec::Encoding::kBitmap: ++report.bitmap_messages; break;
    case codec::Encoding::kCompressed: ++report.compressed_messages; break;
  }
}

class SharingWorker {
 public:
  SharingWorker(RunContext& context, SharingSession& session, bool replacement)
      : context_(context), cfg_(context.config), session_(session),
        batches_per_epoch_(static_cast<std::int64_t>(
            data::EpochPlan(context.data.train.size(), batch_size(), cfg_.data.partition_batches,
                            seed(), 0, false)
                .batch_count())),
        replica_(cfg_, batches_per_epoch_ * cfg_.training.epochs, batches_per_epoch_,
                 static_cast<std::uint64_t>(context.rank)),
        model_(replica_.model()),
        n_(model_.parameter_count()),
        optimizer_(&replica_.optimizer()),
        encoder_(cfg_.encoding, n_),
        exchange_(session.plane(), context.rank, context.size, n_,
                  static_cast<std::size_t>(cfg_.fault_tolerance.keep_bytes)),
        injector_(cfg_.fault_tolerance.inject, context.rank, replacement),
        // encoding.combine: mean shares update / workers (see the key's help).
        update_scale_(cfg_.encoding.combine == "mean"
                          ? 1.0f / static_cast<float>(context.worker_count()) : 1.0f),
        partitions_(context.data.train, batch_size(), static_cast<std::size_t>(cfg_.data.partition_batches),
                    seed(), cfg_.data.shuffle),
        check_conservation_(cfg_.encoding.check_conservation),
        update_sum_(check_conservation_ ? n_ : 0), sent_sum_(check_conservation_ ? n_ : 0),
        heartbeat_period_(static_cast<double>(cfg_.fault_tolerance.heartbeat_ms) / 1000.0),
        timeout_(static_cast<double>(cfg_.transport.timeout_ms) / 1000.0),
        staleness_(context.size, context.rank, cfg_.encoding.max_staleness) {
    phase_ = replacement ? WorkerPhase::kJoining : WorkerPhase::kRequesting;
    exchange_.on_applied([this](const codec::MessageHeader& header) {
      staleness_.applied(static_cast<int>(header.origin), header.iteration,
                         (header.flags & kFlagIdle) != 0, clock_);
    });
  }

  int run() {
    if (phase_ == WorkerPhase::kJoining) join(); else start();
    while (auto grant = next_grant()) train_partition(*grant);
    send_report();
    if (diverged_ || shutdown_code_) return await_shutdown();
    return finish();
  }

 private:
  std::size_t batch_size() const { return static_cast<std::size_t>(cfg_.training.batch_size); }
  std::uint64_t seed() const { return static_cast<std::uint64_t>(cfg_.run.seed); }
  comm::ControlChannel& control() { return session_.control(); }

  // Runs `step`; a process failure somewhere in the job (ULFM) leads to the repair and resync
  // instead, after which the caller carries on. Returns false when that happened.
  template <typename Step>
  bool guarded(Step&& step) {
    try {
      step();
      return true;
    } catch (const comm::MpiError& error) {
      if (!session_.fault_tolerant() || !error.is_process_failure()) throw;
      core::log_warn(std::string("process failure seen: ") + error.what());
      recover();
      return false;
    }
  }

  void start() {
    const auto start = receive<Start>(control(), 0, "initial model").state;
    if (!start.resume) return;
    GS_CHECK(start.parameters.size() == n_, "the master sent a wrong-sized model");
    std::copy(start.parameters.begin(), start.parameters.end(), model_.parameters().begin());
    restore_optimizer(start.worker, *optimizer_);
    encoder_.set_threshold(start.worker.tau);
    if (!start.worker.residual.empty()) {
      GS_CHECK(start.worker.residual.size() == n_, "the master sent a wrong-sized residual");
      std::copy(start.worker.residual.begin(), start.worker.residual.end(),
                encoder_.residual().begin());
    }
  }

  // A replacement: the job is repaired already; take part in the resync like a survivor (a
  // failure during it is repaired and resynced in turn).
  void join() {
    core::log_info("replacement for rank " + std::to_string(context_.rank) + ": joining the job");
    guarded([&] { resync(); });
  }

  // Repairs the job (collective with every survivor), then the resync with the master.
  void recover() {
    injector_.at_recovery();
    for (;;) {
      try {
        session_.repair({});
        exchange_.attach(session_.plane());
        staleness_.forget_peers();  // the dead are gone; a replacement counts from its first update
        resync();
        return;
      } catch (const comm::MpiError& error) {
        if (!error.is_process_failure()) throw;
        core::log_warn(std::string("another process failed during recovery: ") + error.what());
      }
    }
  }

  // Reports where this worker is, serves the master's fetches, applies what it lacked, waits
  // for the go-ahead. A replacement gets its whole start here.
  void resync() {
    WorkerStatus status;
    status.phase = phase_;
    status.holding = holding_;
    status.finished = finished_unacknowledged_;
    status.last_seq = seq_;
    status.conservation_error = conservation_error_;
    status.applied = exchange_.applied_ids();
    send(control(), 0, status);
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
            GS_CHECK(exchange_.deliver(update, model_.parameters()), exchange_.last_error());
          break;
        case ResyncStateFetch::kTag: {
          const auto parameters = model_.parameters();
          send(control(), 0,
               ReplicaState{{parameters.begin(), parameters.end()}, exchange_.applied_ids()});
          break;
        }
        case ReplicaState::kTag: {  // what this replica lacked is no longer kept anywhere
          const auto state = decode<ReplicaState>(message);
          take_parameters(state);
          exchange_.adopt(state.applied);
          break;
        }
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
          drain_targets_.reset();
          drained_sent_ = false;
          return;
        default:
          throw core::RuntimeError(std::string("unexpected ") + comm::tag_name(message.tag) +
                                   " message during the resync");
      }
    }
  }

  // The parameters of another replica's whole state (the master's, or a resync's).
  void take_parameters(const ReplicaState& state) {
    GS_CHECK(state.parameters.size() == n_, "the master sent a wrong-sized model");
    std::copy(state.parameters.begin(), state.parameters.end(), model_.parameters().begin());
  }

  void adopt(const ReplacementStart& start) {
    take_parameters(start.replica);
    exchange_.restore(start.replica.applied);
    restore_optimizer(start.worker, *optimizer_);
    encoder_.set_threshold(start.worker.tau);
    // The dead process's updates carry on from the last one any replica applied.
    seq_ = start.replica.applied.highest(context_.rank);
    clock_ = static_cast<std::int64_t>(start.clock);  // so the bound does not hold the others back
    core::log_info("replacement started from the master's model (update seq " +
                   std::to_string(seq_) + ", clock " + std::to_string(clock_) + ")");
  }

  void send_state() {
    send(control(), 0,
         StateReply{seq_, capture_worker_state(*optimizer_, encoder_.threshold(),
                                               encoder_.residual())});
  }

  // A checkpoint: this worker's state, then no new update until the master has applied every
  // update sent before it and taken its snapshot (kStateTaken), so that the checkpoint's
  // parameters and this residual add up to everything trained, nothing twice. Meanwhile it
  // applies and relays (the master's snapshot may wait for updates relayed through here).
  void checkpoint_state() {
    send_state();
    core::Deadline deadline(timeout_);
    core::Backoff backoff(kBoundBackoffMicroseconds);
    while (!try_receive<StateTaken>(control(), 0)) {
      if (serve_peers()) backoff.reset(); else backoff.wait();
      if (shutdown_code_) return;
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for rank 0: checkpoint snapshot");
    }
  }

  // Applies and relays peers' updates, notes the master's shutdown, keeps the heartbeat going.
  // Returns whether any update arrived.
  bool serve_peers() {
    const bool progress = exchange_.poll(model_.parameters()) > 0;
    if (auto shutdown = try_receive<Shutdown>(control(), 0)) shutdown_code_ = shutdown->exit_code;
    if (heartbeat_clock_.seconds() >= heartbeat_period_) {
      send(control(), 0, Heartbeat{});
      heartbeat_clock_.restart();
    }
    return progress;
  }

  // serve_peers, and answers the master's checkpoint requests.
  bool service() {
    const bool progress = serve_peers();
    while (try_receive<StateRequest>(control(), 0)) checkpoint_state();
    return progress;
  }

  // The next partition from the master, or nothing when every partition has been handed out.
  std::optional<PartitionGrant> next_grant() {
    core::Deadline deadline(timeout_);
    core::Backoff backoff;
    for (;;) {
      if (diverged_ || shutdown_code_) return std::nullopt;
      std::optional<PartitionGrantReply> reply;
      const bool intact = guarded([&] {
        if (!request_pending_) {
          send(control(), 0, PartitionRequest{finished_unacknowledged_.has_value(), seq_});
          request_pending_ = true;
        }
        service();
        reply = try_receive<PartitionGrantReply>(control(), 0);
      });
      if (!intact) {  // recovered: the request is sent again
        deadline = core::Deadline(timeout_);
        continue;
      }
      if (reply) {
        request_pending_ = false;
        finished_unacknowledged_.reset();
        auto assignment = std::move(reply->assignment);
        const auto grant = assignment.grant;
        read_ahead_ = std::move(assignment.read_ahead);
        if (!grant) return std::nullopt;
        holding_ = grant;
        phase_ = WorkerPhase::kTraining;
        return grant;
      }
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for rank 0: partition grant");
      backoff.wait();
    }
  }

  void train_partition(const PartitionGrant& grant) {
    current_epoch_ = static_cast<std::uint32_t>(grant.epoch);
    partitions_.read_ahead(grant, read_ahead_);
    const auto& plan = partitions_.plan(grant.epoch);
    const auto range = plan.partition(static_cast<std::size_t>(grant.partition));
    resume_clock();
    for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
      guarded([&] { service(); });
      wait_for_peers();
      if (shutdown_code_) return;  // the master ended the run (another worker diverged)
      const auto result = replica_.gradient(context_.data.train, plan.batch_indices(b));
      if (auto reason = divergence_.check(clock_ + 1, result.loss)) {
        report_divergence(*reason);
        return;
      }
      replica_.compute_update(grant.epoch * batches_per_epoch_ + static_cast<std::int64_t>(b));
      const auto update = replica_.update();
      if (update_scale_ != 1.0f) kernels::cpu::scale(update_scale_, update.data(), update.data(), n_);
      ++steps_;
      ++clock_;
      if (check_conservation_)
        for (std::size_t i = 0; i < n_; ++i) update_sum_[i] += update[i];
      guarded([&] { share_update(grant); });
      record_step(result);
      injector_.at_step(steps_);
    }
    finished_unacknowledged_ = grant;
    holding_.reset();
    phase_ = WorkerPhase::kRequesting;
  }

  // Encodes this step's update and sends it, or leaves it in the residual (back-pressure) when
  // the links lack room for the message it would be (a bound from what fires now).
  void share_update(const PartitionGrant& grant) {
    // Room for the largest message is the common case and needs no count of what fires.
    if (!exchange_.can_publish(encoder_.max_message_bytes()) &&
        !exchange_.can_publish(encoder_.message_bytes_bound(replica_.update()))) {
      encoder_.accumulate(replica_.update());
      ++report_.backpressure;
      return;
    }
    share(replica_.update(), static_cast<std::uint32_t>(grant.epoch), 0);
  }

  // Encodes `update` against the residual and publishes it, stamped with this worker's clock.
  void share(std::span<const float> update, std::uint32_t epoch, std::uint32_t flags) {
    const codec::MessageMeta meta{static_cast<std::uint32_t>(context_.rank), ++seq_,
                                  static_cast<std::uint64_t>(clock_), epoch, flags};
    const auto stats = encoder_.encode(update, meta, message_);
    sent_clock_ = clock_;
    if (check_conservation_) {
      std::string error;
      GS_CHECK(codec::accumulate_message(message_, sent_sum_, &error), error);
    }
    ++report_.messages;
    report_.bytes += static_cast<std::int64_t>(stats.bytes);
    report_.entries += static_cast<std::int64_t>(stats.entries);
    report_.sparsity_sum += stats.sparsity;
    report_.clipped_mass += stats.clipped_mass;
    if (stats.shake_up) ++report_.shake_ups;
    if (stats.capped) ++report_.capped_messages;
    count_encoding(report_, stats.encoding);
    // Last: once applied here the update is the exchange's (kept for a resync if sending fails).
    exchange_.publish(message_, model_.parameters());
  }

  // The divergence guard fired: nothing of this step is shared; the master ends the run.
  void report_divergence(const std::string& reason) {
    diverged_ = true;
    core::log_error("diverged: " + reason);
    guarded([&] {
      send(control(), 0, Diverged{clock_ + 1, reason});
    });
  }

  // After a divergence: keep serving until the master's shutdown.
  int await_shutdown() {
    core::Backoff backoff;
    core::Deadline deadline(timeout_);
    while (!shutdown_code_) {
      guarded([&] { service(); });
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for the master to end the diverged run");
      backoff.wait();
    }
    return *shutdown_code_;
  }

  // The staleness bound (staleness.h): before the next step, wait while a training peer's
  // updates lag more than encoding.max_staleness steps behind this worker's clock. Waiting, it
  // keeps applying and relaying, and sends the steps its residual still holds (back-pressure),
  // so that peers waiting on this worker see its clock move.
  void wait_for_peers() {
    auto blocking = staleness_.blocking_peer(clock_);
    if (!blocking) return;
    core::Stopwatch waited;
    core::Deadline deadline(timeout_);
    // A short back-off: the awaited update is usually one relay away, a step is milliseconds.
    core::Backoff backoff(kBoundBackoffMicroseconds);
    while (blocking) {
      bool progress = false;
      guarded([&] {
        progress = service();
        if (sent_clock_ < clock_ && exchange_.can_publish(encoder_.message_bytes_bound(zeros()))) {
          share(zeros(), current_epoch_, 0);
          progress = true;
        }
      });
      blocking = staleness_.blocking_peer(clock_);
      if (!blocking || shutdown_code_) break;
      if (deadline.expired())
        throw core::RuntimeError(
            "timed out after " + std::to_string(timeout_) + " s waiting for rank " +
            std::to_string(*blocking) + "'s updates (its newest applied here is from step " +
            std::to_string(staleness_.clock_of(*blocking)) + ", this worker is at step " +
            std::to_string(clock_) + ", encoding.max_staleness " +
            std::to_string(staleness_.bound()) + ")");
      if (progress) backoff.reset(); else backoff.wait();
    }
    ++staleness_.stats().waits;
    staleness_.stats().wait_seconds += waited.seconds();
  }

  // A worker that was idle (no partition) starts again level with the slowest training peer,
  // so that its own clock does not hold the others back.
  void resume_clock() {
    if (!was_idle_) return;
    was_idle_ = false;
    if (const auto slowest = staleness_.slowest_training_peer())
      clock_ = std::max(clock_, static_cast<std::int64_t>(*slowest));
  }

  // No partition left to train: tell the peers (a message flagged idle, carrying what the
  // residual holds above tau) so that the staleness bound stops waiting on this worker.
  void announce_idle() {
    core::Deadline deadline(timeout_);
    core::Backoff backoff;
    for (;;) {
      bool sent = false;
      guarded([&] {
        service();
        if (exchange_.can_publish(encoder_.message_bytes_bound(zeros()))) {
          share(zeros(), current_epoch_, kFlagIdle);
          sent = true;
        }
      });
      if (sent) break;
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for room to send the final update");
      backoff.wait();
    }
    was_idle_ = true;
  }

  std::span<const float> zeros() {
    if (zeros_.empty()) zeros_.assign(n_, 0.0f);
    return zeros_;
  }

  void record_step(const StepResult& result) {
    const float tau = encoder_.threshold();
    report_.tau_min = report_.steps == 0 ? tau : std::min(report_.tau_min, tau);
    report_.tau_max = report_.steps == 0 ? tau : std::max(report_.tau_max, tau);
    ++report_.steps;
    report_.samples += result.samples;
    report_.loss_sum += result.loss;
    report_.correct += result.correct;
    if (report_.steps >= cfg_.logging.every_steps) send_report();
  }

  void send_report() {
    report_.staleness = std::exchange(staleness_.stats(), StalenessStats{});
    const auto& now = exchange_.stats();
    report_.relayed = static_cast<std::int64_t>(now.relayed - reported_exchange_.relayed);
    report_.duplicates = static_cast<std::int64_t>(now.duplicates - reported_exchange_.duplicates);
    report_.rejected = static_cast<std::int64_t>(now.rejected - reported_exchange_.rejected);
    reported_exchange_ = now;
    report_.seconds = report_clock_.seconds();
    report_clock_.restart();
    if (cfg_.logging.encoding_debug) {
      const auto residual = encoder_.residual();
      const auto norms = kernels::cpu::norm_stats(residual.data(), residual.size());
      report_.residual_l2 = static_cast<float>(norms.l2);
      report_.residual_max_abs = static_cast<float>(norms.max_abs);
    }
    guarded([&] { send(control(), 0, report_); });
    report_ = WorkerReport{};
  }

  // Drain: tell the master how many updates this worker sent, then keep applying and relaying
  // until every replica's updates have arrived here; then wait for the end of the job. A
  // recovery on the way sends this worker back to asking for partitions.
  int finish() {
    if (check_conservation_ && conservation_error_ < 0)
      conservation_error_ = conservation_error(update_sum_, sent_sum_, encoder_);
    phase_ = WorkerPhase::kDone;
    announce_idle();  // before kDone: the idle message is one of the updates counted there
    bool done_sent = false;
    core::Backoff backoff;
    core::Deadline deadline(timeout_);
    std::optional<int> exit_code;
    for (;;) {
      const bool intact = guarded([&] {
        if (!done_sent) {
          send(control(), 0, SharingDone{seq_, conservation_error_, core::peak_resident_bytes()});
          done_sent = true;
        }
        const bool progress = service();
        if (!drain_targets_)
          if (auto target = try_receive<SharingDrainTarget>(control(), 0)) {
            drain_targets_ = std::move(target->last_seq);
            deadline = core::Deadline(timeout_);
          }
        if (drain_targets_ && !drained_sent_ && drained()) {
          const auto parameters = model_.parameters();
          DrainedReport report;
          report.applied_twice = exchange_.applied_twice();
          report.published = exchange_.stats().published;
          report.relayed = exchange_.stats().relayed;
          report.links = static_cast<std::int32_t>(exchange_.link_count());
          report.bytes_published = exchange_.stats().bytes_published;
          report.transport = session_.plane().stats();
          report.cpu_seconds = core::process_cpu_seconds() - cpu_start_;
          report.parameters.assign(parameters.begin(), parameters.end());
          send(control(), 0, report);
          drained_sent_ = true;
        }
        exit_code = shutdown_code_;
        if (progress) backoff.reset(); else backoff.wait();
      });
      if (exit_code) break;
      if (!intact) {
        // Back to asking for work: a dead worker's partition may be waiting.
        while (auto grant = next_grant()) train_partition(*grant);
        phase_ = WorkerPhase::kDone;
        announce_idle();
        done_sent = false;
        deadline = core::Deadline(timeout_);
        continue;
      }
      if (drain_targets_ && !drained_sent_ && deadline.expired()) throw drain_timeout();
    }
    core::log_info("worker done: " + std::to_string(steps_) + " steps, " + std::to_string(seq_) +
                   " updates sent, " + std::to_string(exchange_.stats().duplicates) + " duplicates");
    return *exit_code;
  }

  bool drained() const {
    for (std::size_t origin = 1; origin < drain_targets_->size(); ++origin)
      if (exchange_.version_vector()[origin] < (*drain_targets_)[origin]) return false;
    return !exchange_.has_backlog();
  }

  core::RuntimeError drain_timeout() const {
    std::string missing;
    for (std::size_t origin = 1; origin < drain_targets_->size(); ++origin)
      if (exchange_.version_vector()[origin] < (*drain_targets_)[origin])
        missing += " rank " + std::to_string(origin) + " (have " +
                   std::to_string(exchange_.version_vector()[origin]) + " of " +
                   std::to_string((*drain_targets_)[origin]) + ")";
    return core::RuntimeError("timed out draining updates from" +
                              (missing.empty() ? std::string(" the relay queues") : missing));
  }

  RunContext& context_;
  const config::ExperimentConfig& cfg_;
  SharingSession& session_;
  std::int64_t batches_per_epoch_;
  Replica replica_;
  nn::Model& model_;
  std::size_t n_;
  nn::Optimizer* optimizer_;
  codec::Encoder encoder_;
  UpdateExchange exchange_;
  FaultInjector injector_;  // mutable: remembers its first recovery
  float update_scale_;
  PartitionData partitions_;
  std::vector<PartitionGrant> read_ahead_;  // reserved for the next requests (last grant)
  std::vector<std::uint8_t> message_;

  // encoding.check_conservation: every update summed, and every quantum this worker sent.
  bool check_conservation_;
  std::vector<double> update_sum_;
  std::vector<float> sent_sum_;
  double conservation_error_ = -1;

  WorkerReport report_;
  ExchangeStats reported_exchange_;
  core::Stopwatch report_clock_;
  double cpu_start_ = core::process_cpu_seconds();  // beside report_clock_: the same span
  core::Stopwatch heartbeat_clock_;
  double heartbeat_period_;
  double timeout_;

  // Where this worker is, for the resync after a failure.
  WorkerPhase phase_;
  std::optional<PartitionGrant> holding_;
  std::optional<PartitionGrant> finished_unacknowledged_;
  bool request_pending_ = false;
  std::optional<std::vector<std::uint64_t>> drain_targets_;
  bool drained_sent_ = false;
  std::uint64_t seq_ = 0;
  std::int64_t steps_ = 0;

  // The staleness bound: this worker's clock (steps, a replacement continuing the dead rank's),
  // the clock of its newest sent update, and the peers' clocks.
  StalenessTracker staleness_;
  std::int64_t clock_ = 0;
  std::int64_t sent_clock_ = 0;
  bool was_idle_ = false;
  DivergenceGuard divergence_{cfg_.training};
  bool diverged_ = false;
  std::optional<int> shutdown_code_;  // the master's kShutdown, whenever it came
  std::uint32_t current_epoch_ = 0;
  std::vector<float> zeros_;
};

}  // namespace

int run_sharing_worker(RunContext& context, SharingSession& session, bool replacement) {
  return SharingWorker(context, session, replacement).run();
}

}  // namespace gradshare::train
