// sharing/master.cpp: the master's loop, its reactions to the workers' messages, the start of
// the workers and the drain (the class is in sharing/master.h).
#include "train/sharing/master.h"

namespace gradshare::train {

// The master's state and its reactions to the workers' messages.

SharingMaster::SharingMaster(runtime::RunContext& context, SharingSession& session)
    : MasterBase(context, session, runtime::build_model(context.config)),
      session_(session),
      exchange_(session.plane(), 0, context.size, model_.parameter_count(),
                keep_budget(session, context.config)),
      shape_(runtime::epoch_shape(cfg_, context.data.train)),
      recoveries_(context.metrics),
      live_(session.live_workers()),
      liveness_(context.config.fault_tolerance.timeout_ms),
      drain_(context.size),
      tau_(static_cast<std::size_t>(context.worker_count()),
           static_cast<float>(cfg_.encoding.initial_threshold)) {
  if (sharing_aggregates(cfg_, session.tree()))
    exchange_.aggregate(cfg_.encoding, cfg_.topology.aggregate_wait_ms / 1000.0,
                        static_cast<int>(cfg_.topology.aggregate_band), false, session.tree());
  exchange_.on_applied([this](const codec::ParsedMessage& message) {
    auto& clock = clocks_[message.header.origin];
    clock = std::max(clock, message.header.iteration);
    checkpoint_.applied(message);
  });
}

int SharingMaster::run() {
  runtime::log_model(model_);
  if (const auto momentum = sharing_momentum_line(cfg_, context_.worker_count());
      !momentum.empty())
    core::log_info(momentum);
  const auto resume = runtime::Checkpointer::find_resume(context_);
  // The checkpoint resumed from is the newest: none is due until every_steps after it.
  if (resume) checkpointer_.mark_written(resume->iteration);
  try {
    start_workers(resume);
  } catch (const comm::TransportError& error) {
    if (!recover(error)) throw;  // a worker without its start joins the resync as a replacement
  }
  return run_from(resume ? resume->iteration : 0);
}

int SharingMaster::run_from(std::int64_t first_step) {
  const auto steps_per_epoch = static_cast<std::int64_t>(shape_.batch_count());
  progress_.emplace(context_, steps_per_epoch, model_.parameter_count(), first_step);
  const double cpu_start = core::process_cpu_seconds();
  core::Stopwatch wall;
  const int exit_code = run_loop();
  return end_run(exit_code, core::process_cpu_seconds() - cpu_start, wall.seconds());
}

int SharingMaster::end_run(int exit_code, double cpu_seconds, double wall_seconds) {
  if (stopping_ && !diverged_) {
    // One under way holds an older cut: it is finished (its pieces are on their way), then the
    // stop checkpoint holds everything the drained workers trained.
    if (checkpoint_.under_way()) write_checkpoint(fetch_worker_states());
    write_checkpoint(fetch_worker_states());
  }
  // The results before the Shutdown: a master lost until then is replaced in-job
  // (sharing/takeover.h) by the workers, which still wait for it. A diverged model is never
  // saved: the newest checkpoint stays the newest good one.
  bool equivalent = true;
  if (!diverged_) {
    equivalent = check_equivalence();
    summarize(cpu_seconds, wall_seconds, equivalent);
    recoveries_.summarize();
    summarize_relays();
    peak_memory_.summarize(context_);
    if (!stopping_)
      write_final_model(context_, model_, reporter_, [&] {
        return checkpoint_of(model_, progress_->steps(), scheduler_->position(),
                             exchange_.version_vector(), {});
      });
  }
  end_job(live_, exit_code);
  if (!equivalent && !stopping_)
    throw core::RuntimeError("replicas diverged: model-equivalence check failed");
  return exit_code;
}

void SharingMaster::on_stop_signal() { request_stop(kFinishPartitionsInFlight); }

std::optional<int> SharingMaster::finished() {
  if (diverged_) return core::kExitDiverged;
  // A checkpoint still being collected is finished in the loop, where a failure is repaired
  // (the stop checkpoint follows the loop).
  if (!drain_.complete(live_, exchange_) || (checkpoint_.under_way() && !stopping_))
    return std::nullopt;
  return exit_code();
}

bool SharingMaster::recover(const comm::TransportError& error) {
  if (!session_.fault_tolerant() || !error.is_process_failure())
    return false;
  repair_and_resync(error.what());
  return true;
}

std::string SharingMaster::awaited() const {
  return "the gradient-sharing workers (" + std::to_string(drain_.done_count()) + " of " +
         std::to_string(live_.size()) + " done, " + std::to_string(drain_.drained_count()) +
         " drained)";
}

std::size_t SharingMaster::relay() {
  std::size_t received = exchange_.poll(model_.parameters(), clock_.seconds());
  if (exchange_.aggregating()) {
    // A cut's copy is taken before anything a child sent after its marker comes in.
    if (checkpoint_.copy_cut_if_due(exchange_, model_.parameters()))
      received += exchange_.release_cut(model_.parameters(), clock_.seconds());
    // The workers' epochs, all of them together, for the links' caps (their warm-up).
    if (progress_)
      exchange_.set_training_progress(static_cast<double>(progress_->steps()) /
                                      static_cast<double>(shape_.batch_count()));
    exchange_.send_aggregates(clock_.seconds(), false);
  }
  return received;
}

bool SharingMaster::poll() {
  bool busy = relay() > 0;
  // Heartbeats come every fault_tolerance.heartbeat_ms: reading them and checking for silence
  // a few times a period is enough, and keeps a probe of their channel off every relay pass.
  if (liveness_clock_.seconds() >= liveness_period_) {
    liveness_clock_.restart();
    if (auto* beats = session_.heartbeats())
      while (auto beat = beats->try_receive()) liveness_.heard(beat->source);
    liveness_.check(live_, session_.fault_tolerant(), session_.processes());
  }
  for (const auto epoch : scheduler_->take_completed_epochs()) {
    const double cpu_before = core::process_cpu_seconds();
    std::copy(model_.parameters().begin(), model_.parameters().end(),
              snapshot_.parameters().begin());
    const auto minibatches = scheduler_->minibatches_in(epoch);
    relay_during(
        [&] { reporter_.end_of_epoch(snapshot_, epoch + 1, progress_->steps(), minibatches); });
    evaluation_cpu_ += core::process_cpu_seconds() - cpu_before;
    if (checkpointer_.at_epoch_end()) request_checkpoint();
  }
  // (due() holds until a newer checkpoint is written: not a second one while this one is taken)
  if (checkpointer_.due(progress_->steps()) && !checkpoint_.under_way()) request_checkpoint();
  write_checkpoint_if_complete();
  progress_->maybe_log(static_cast<double>(exchange_.stats().relayed));
  // Aggregating, the drain's flush round follows the checkpoint under way.
  if (drain_.ready_to_send(live_) && !(exchange_.aggregating() && checkpoint_.under_way()))
    drain_.send_targets(live_, exchange_, control());
  return busy;
}

void SharingMaster::start_workers(const std::optional<ckpt::Checkpoint>& resume) {
  StartState start;
  runtime::DataPosition position;
  if (resume) {
    runtime::restore_checkpoint(*resume, "checkpoint", model_, nullptr);
    position = runtime::data_position(*resume);
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

std::optional<int> SharingMaster::handle(const comm::ControlMessage& message) {
  const int worker = message.source;
  liveness_.heard(worker);
  switch (message.tag) {
    case PartitionRequest::kTag: {
      const auto request = decode<PartitionRequest>(message);
      if (request.finished_previous) finish_partition(worker, request.last_seq);
      grant_seq_[worker] = exchange_.highest_applied(worker);
      send(control(), worker,
           PartitionGrantReply{stopping_ || reporter_.stop_early() ? runtime::PartitionAssignment{}
                                                                   : scheduler_->assign(worker)});
      break;
    }
    case Diverged::kTag: {
      if (!diverged_) report_divergence(worker, decode<Diverged>(message));
      break;
    }
    case Heartbeat::kTag:
      break;
    case SharingReport::kTag: {
      const auto report = decode<SharingReport>(message);
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
    case StateChunk::kTag:
      checkpoint_.take_piece(worker, decode<StateChunk>(message), control());
      write_checkpoint_if_complete();
      break;
    case SharingDone::kTag: {
      const auto done = decode<SharingDone>(message);
      drain_.done(worker, done);
      conservation_error_ = std::max(conservation_error_, done.conservation_error);
      peak_memory_.add(worker, done.peak_bytes);
      break;
    }
    case DrainedReport::kTag:
      drain_.drained(worker, decode<DrainedReport>(message));
      break;
    default:
      unexpected_message(message);
  }
  return std::nullopt;
}

void SharingMaster::relay_during(const std::function<void()>& work) {
  runtime::poll_during(work, [&] { return relay(); });
  liveness_.master_was_busy();
}

void SharingMaster::report_divergence(int worker, const Diverged& diverged) {
  // Stale updates are a likely cause where the bound is off, the likelier one where it is
  // loose and the updates were stale.
  const double staleness = progress_->total().staleness.mean();
  const auto bound = cfg_.encoding.max_staleness;
  const std::string rate_cause =
      runtime::learning_rate_cause(context_) + " for " + std::to_string(context_.worker_count()) +
      " workers" +
      (cfg_.encoding.combine == "sum" ? " whose updates add up (encoding.combine: sum)" : "");
  char stale[200];
  std::snprintf(stale, sizeof stale,
                "updates applied %.1f steps stale on average with encoding.max_staleness %lld "
                "(a bound of 2 keeps them fresh)",
                staleness, static_cast<long long>(bound));
  const std::string cause =
      bound == 0 ? rate_cause +
                       ", or stale updates: encoding.max_staleness 0 turns the bound "
                       "off (2 keeps them fresh)"
      : bound > 4 && staleness > 2 ? std::string(stale)
                                   : rate_cause;
  note_divergence(worker, diverged, cause);
}

int run_sharing_master(runtime::RunContext& context, SharingSession& session) {
  return SharingMaster(context, session).run();
}

int take_over_sharing_master(runtime::RunContext& context, SharingSession& session,
                             std::optional<SharingHandover> handover) {
  const auto lock = become_master(context, session.last_repair());
  return SharingMaster(context, session).take_over(std::move(handover));
}

}  // namespace gradshare::train
