// sharing/worker.cpp: a worker's training loop: grants, steps, sharing its updates, serving its
// peers and the master (the class is in sharing/worker.h).
#include "train/sharing/worker.h"

#include "runtime/model_file.h"
#include "train/sharing/gradient_sharing.h"
#include "train/sharing/roles.h"

namespace gradshare::train {

namespace {

constexpr int kBoundBackoffMicroseconds = 100;

void count_encoding(SharingReport& report, codec::Encoding encoding) {
  switch (encoding) {
    case codec::Encoding::kSparse:
      ++report.sparse_messages;
      break;
    case codec::Encoding::kBitmap:
      ++report.bitmap_messages;
      break;
    case codec::Encoding::kCompressed:
      ++report.compressed_messages;
      break;
    case codec::Encoding::kExact:   // only an aggregating relay sends these, never a worker's
    case codec::Encoding::kValues:  // own encoder
      break;
  }
}

}  // namespace

SharingWorker::SharingWorker(runtime::RunContext& context, SharingSession& session,
                             bool replacement)
    : AsyncWorker(context, sharing_worker_config(context.config, context.worker_count()),
                  runtime::build_model(context.config), replacement),
      session_(session),
      encoder_(cfg_.encoding, n_),
      exchange_(session.plane(), context.rank, context.size, n_, keep_budget(session, cfg_)),
      // encoding.combine: mean shares update / workers (see the key's help).
      update_scale_(cfg_.encoding.combine == "mean"
                        ? 1.0f / static_cast<float>(context.worker_count())
                        : 1.0f),
      check_conservation_(cfg_.encoding.check_conservation),
      update_sum_(check_conservation_ ? n_ : 0),
      sent_sum_(check_conservation_ ? n_ : 0),
      heartbeat_period_(static_cast<double>(cfg_.fault_tolerance.heartbeat_ms) / 1000.0),
      timeout_(static_cast<double>(cfg_.transport.timeout_ms) / 1000.0),
      staleness_(context.size, context.rank, sharing_staleness_bound(cfg_, session.tree()),
                 sharing_aggregates(cfg_, session.tree())) {
  encoder_.limit_message_bytes(session.plane().max_message_bytes());
  if (sharing_aggregates(cfg_, session.tree()))
    exchange_.aggregate(cfg_.encoding, cfg_.topology.aggregate_wait_ms / 1000.0,
                        static_cast<int>(cfg_.topology.aggregate_band), true, session.tree());
  if (cfg_.encoding.momentum == "mask") momentum_mask_.emplace(n_);
  phase_ = replacement ? WorkerPhase::kJoining : WorkerPhase::kRequesting;
  exchange_.on_applied([this](const codec::ParsedMessage& message) {
    const auto& header = message.header;
    staleness_.applied(static_cast<int>(header.origin), header.iteration,
                       (header.flags & kFlagIdle) != 0, clock_);
  });
  if (session.heartbeats())
    heartbeat_.emplace(heartbeat_period_,
                       static_cast<double>(cfg_.fault_tolerance.stall_timeout_ms) / 1000.0,
                       [this] { send(*session_.heartbeats(), 0, Heartbeat{}); });
}

int SharingWorker::run() {
  if (phase_ == WorkerPhase::kJoining)
    join();
  else
    start();
  while (auto grant = next_grant()) train_partition(*grant);
  if (shutdown_code_) return *shutdown_code_;  // the master ended the run: it wants nothing more
  send_report();
  if (diverged_) return await_shutdown();
  return finish();
}

void SharingWorker::start() {
  // A process that fails before the start arrives takes the start with the old channel: this
  // worker then joins the resync as a replacement does (the master's model, a live worker's
  // optimizer state).
  phase_ = WorkerPhase::kJoining;
  std::optional<StartState> received;
  if (!guarded([&] { received = receive<Start>(control(), 0, "initial model").state; })) return;
  phase_ = WorkerPhase::kRequesting;
  const auto& start = *received;
  if (!start.resume) {
    note_relay_base();
    return;
  }
  GS_CHECK(start.parameters.size() == n_, "the master sent a wrong-sized model");
  std::copy(start.parameters.begin(), start.parameters.end(), replica_.parameters().begin());
  restore_optimizer(start.worker, replica_.optimizer());
  encoder_.set_threshold(start.worker.tau);
  if (!start.worker.residual.empty()) {
    GS_CHECK(start.worker.residual.size() == n_, "the master sent a wrong-sized residual");
    std::copy(start.worker.residual.begin(), start.worker.residual.end(),
              encoder_.residual().begin());
  }
  note_relay_base();
}

bool SharingWorker::serve_peers() {
  const bool progress = exchange_.poll(replica_.parameters(), now()) > 0;
  if (exchange_.aggregating()) exchange_.send_aggregates(now(), false);
  if (auto shutdown = try_receive<Shutdown>(control(), 0)) shutdown_code_ = shutdown->exit_code;
  take_state_acknowledgements();
  if (heartbeat_) {
    heartbeat_->alive();
  } else if (heartbeat_clock_.seconds() >= heartbeat_period_) {
    send(control(), 0, Heartbeat{});
    heartbeat_clock_.restart();
  }
  return progress;
}

bool SharingWorker::service() {
  const bool progress = serve_peers();
  while (const auto request = try_receive<CheckpointRequest>(control(), 0)) {
    checkpoint_request_ = *request;
    if (exchange_.aggregating())
      pause_for_checkpoint();
    else
      checkpoint_state();
  }
  if (state_owed_) send_state_after_marker();
  return progress;
}

bool SharingWorker::in_flush_round() const {
  const auto& relay = exchange_.aggregator();
  return relay.round() > 0 && !relay.round_complete(relay.round());
}

bool SharingWorker::held_by_flush() const {
  return exchange_.aggregating() && (in_flush_round() || state_owed_);
}

void SharingWorker::wait_for_flush() {
  if (!exchange_.aggregating()) return;
  core::Deadline deadline(timeout_);
  core::Backoff backoff(kBoundBackoffMicroseconds);
  while (held_by_flush() && !shutdown_code_) {
    bool progress = false;
    guarded([&] { progress = service(); });
    if (deadline.expired())
      throw core::RuntimeError(
          "timed out after " + std::to_string(timeout_) + " s " +
          (in_flush_round()
               ? "in flush round " + std::to_string(exchange_.aggregator().round()) +
                     " waiting for its finals from the neighbours in the tree"
               : "paused for checkpoint " + std::to_string(checkpoint_cut_) +
                     ", waiting for the markers of the subtree below"));
    if (progress)
      backoff.reset();
    else
      backoff.wait();
  }
  exchange_.aggregator().set_training(true);
}

void SharingWorker::wait_until_free() {
  do {
    wait_for_flush();
    wait_for_peers();
  } while (held_by_flush() && !shutdown_code_);
}

std::optional<runtime::PartitionGrant> SharingWorker::next_grant() {
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

void SharingWorker::train_partition(const runtime::PartitionGrant& grant) {
  current_epoch_ = static_cast<std::uint32_t>(grant.epoch);
  const auto& plan = open_partition(grant, read_ahead_);
  const auto range = plan.partition(static_cast<std::size_t>(grant.partition));
  resume_clock();
  trained_of_held_ = 0;
  for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
    guarded([&] { service(); });
    wait_until_free();
    if (shutdown_code_) return;  // the master ended the run (another worker diverged)
    const auto batch = plan.batch_indices(b);
    const auto& train = context_.data.train;
    const auto result = cfg_.encoding.local_view
                            ? replica_.gradient_at_offset(encoder_.residual(), train, batch)
                            : replica_.gradient(train, batch);
    if (const auto diverged = check_divergence(clock_ + 1, result.loss)) {
      guarded([&] { send(control(), 0, *diverged); });  // the master ends the run
      return;
    }
    const std::int64_t step = schedule_step(grant, b);
    replica_.compute_update(step);
    const double epochs = static_cast<double>(step) / static_cast<double>(batches_per_epoch_);
    encoder_.set_training_progress(epochs);
    if (exchange_.aggregating()) exchange_.set_training_progress(epochs);
    const auto update = replica_.update();
    if (update_scale_ != 1.0f) kernels::cpu::scale(update_scale_, update.data(), update.data(), n_);
    ++steps_;
    ++trained_of_held_;
    ++clock_;
    if (check_conservation_)
      for (std::size_t i = 0; i < n_; ++i) update_sum_[i] += update[i];
    guarded([&] { share_update(grant); });
    record_step(result);
    injector_.at_step(steps_);
  }
  finished_unacknowledged_ = grant;
  done_partitions_.push_back(grant);
  holding_.reset();
  phase_ = WorkerPhase::kRequesting;
}

void SharingWorker::share_update(const runtime::PartitionGrant& grant) {
  // Room for the largest message is the common case and needs no count of what fires.
  if (!exchange_.can_publish(encoder_.max_message_bytes()) &&
      !exchange_.can_publish(encoder_.message_bytes_bound(replica_.update()))) {
    encoder_.accumulate(replica_.update());
    ++report_.backpressure;
    return;
  }
  share(replica_.update(), static_cast<std::uint32_t>(grant.epoch), 0);
}

void SharingWorker::share(std::span<const float> update, std::uint32_t epoch, std::uint32_t flags) {
  const codec::MessageMeta meta{static_cast<std::uint32_t>(context_.rank), ++seq_,
                                static_cast<std::uint64_t>(clock_), epoch, flags};
  const auto stats = encoder_.encode(update, meta, message_);
  if (momentum_mask_) momentum_mask_->after_message(message_, replica_.optimizer());
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
  exchange_.publish(message_, replica_.parameters(), now());
}

void SharingWorker::wait_for_peers() {
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
      // (Paused for a checkpoint's cut, nothing of this worker's may leave: its residual is in
      // the checkpoint's state.)
      if (sent_clock_ < clock_ && !held_by_flush() &&
          exchange_.can_publish(encoder_.message_bytes_bound(zeros()))) {
        share(zeros(), current_epoch_, 0);
        progress = true;
      }
      // Aggregating: what the links are owed goes now (peers waiting on this worker see it).
      if (exchange_.aggregating()) exchange_.send_aggregates(now(), true);
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
    if (progress)
      backoff.reset();
    else
      backoff.wait();
  }
  ++staleness_.stats().waits;
  staleness_.stats().wait_seconds += waited.seconds();
}

void SharingWorker::resume_clock() {
  if (!was_idle_) return;
  was_idle_ = false;
  if (const auto slowest = staleness_.slowest_training_peer())
    clock_ = std::max(clock_, static_cast<std::int64_t>(*slowest));
}

void SharingWorker::announce_idle() {
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

std::span<const float> SharingWorker::zeros() {
  if (zeros_.empty()) zeros_.assign(n_, 0.0f);
  return zeros_;
}

int run_sharing_worker(runtime::RunContext& context, SharingSession& session, bool replacement) {
  try {
    return SharingWorker(context, session, replacement).run();
  } catch (SharingBecameMaster& became) {  // a repair gave this worker the lost master's place
    return take_over_sharing_master(context, session, std::move(became.handover));
  }
}

}  // namespace gradshare::train
