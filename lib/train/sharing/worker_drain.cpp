// sharing/worker_drain.cpp: a worker's reports and its end: the figures it sends, the drain
// once no partition is left (every update of the run applied here), and the divergence stop.
#include "train/sharing/worker.h"

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
    worst = std::max(worst,
                     std::fabs(update_sum[i] - (static_cast<double>(sent_sum[i]) + residual[i])));
    scale = std::max(scale, std::fabs(update_sum[i]));
  }
  const double relative = scale > 0 ? worst / scale : worst;
  core::log_info("conservation check: max |sum(updates) - sent - residual| = " +
                 std::to_string(worst) + " (relative " + std::to_string(relative) + ")");
  return relative;
}

}  // namespace

int SharingWorker::await_shutdown() {
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

void SharingWorker::record_step(const StepResult& result) {
  const float tau = encoder_.threshold();
  report_.tau_min = report_.steps == 0 ? tau : std::min(report_.tau_min, tau);
  report_.tau_max = report_.steps == 0 ? tau : std::max(report_.tau_max, tau);
  report_.count(result);
  if (report_.steps >= cfg_.logging.every_steps) send_report();
}

void SharingWorker::send_report() {
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
  report_ = SharingReport{};
}

int SharingWorker::finish() {
  if (check_conservation_ && conservation_error_ < 0)
    conservation_error_ = conservation_error(update_sum_, sent_sum_, encoder_);
  phase_ = WorkerPhase::kDone;
  announce_idle();  // before SharingDone: the idle message is one of the updates counted there
  if (exchange_.aggregating()) exchange_.aggregator().set_training(false);
  bool done_sent = false;
  core::Backoff backoff;
  core::Deadline deadline(timeout_);
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
          drain_round_ = target->flush_round;
          deadline = core::Deadline(timeout_);
        }
      // Aggregating: with no partition left this worker joins the drain's flush round once no
      // checkpoint holds it.
      if (exchange_.aggregating() && !drained_sent_ && !held_by_flush() &&
          (drain_round_ == 0 || exchange_.aggregator().round() < drain_round_))
        exchange_.begin_flush();
      if (drain_targets_ && !drained_sent_ && drained()) {
        DrainedReport report;
        report.applied_twice = exchange_.applied_twice();
        report.published = exchange_.stats().published;
        report.relayed = exchange_.stats().relayed;
        report.links = static_cast<std::int32_t>(exchange_.link_count());
        report.bytes_published = exchange_.stats().bytes_published;
        report.transport = session_.plane().stats();
        report.cpu_seconds = core::process_cpu_seconds() - cpu_start_;
        report.flush_messages = exchange_.stats().flushed;
        report.flush_bytes = exchange_.stats().flushed_bytes;
        report.parameters = replica_.copy_parameters();
        send(control(), 0, report);
        drained_sent_ = true;
        session_.hand_in_results();
        injector_.at_hand_in();
      }
      if (progress)
        backoff.reset();
      else
        backoff.wait();
    });
    if (shutdown_code_) break;  // (also when a failure came after it)
    if (!intact) {
      // Back to asking for work: a dead worker's partition may be waiting.
      while (auto grant = next_grant()) train_partition(*grant);
      phase_ = WorkerPhase::kDone;
      announce_idle();
      if (exchange_.aggregating()) exchange_.aggregator().set_training(false);
      done_sent = false;
      deadline = core::Deadline(timeout_);
      continue;
    }
    if (drain_targets_ && !drained_sent_ && deadline.expired()) throw drain_timeout();
  }
  core::log_info("worker done: " + std::to_string(steps_) + " steps, " + std::to_string(seq_) +
                 " updates sent, " + std::to_string(exchange_.stats().duplicates) + " duplicates" +
                 replica_.clipping_summary());
  return *shutdown_code_;
}

bool SharingWorker::drained() const {
  if (exchange_.aggregating())
    return exchange_.aggregator().round() >= drain_round_ && exchange_.flush_complete(drain_round_);
  for (std::size_t origin = 1; origin < drain_targets_->size(); ++origin)
    if (exchange_.version_vector()[origin] < (*drain_targets_)[origin]) return false;
  return !exchange_.has_backlog();
}

core::RuntimeError SharingWorker::drain_timeout() const {
  if (exchange_.aggregating())
    return core::RuntimeError("timed out draining: flush round " + std::to_string(drain_round_) +
                              " still waits for finals from the neighbours in the tree");
  std::string missing;
  for (std::size_t origin = 1; origin < drain_targets_->size(); ++origin)
    if (exchange_.version_vector()[origin] < (*drain_targets_)[origin])
      missing += " rank " + std::to_string(origin) + " (have " +
                 std::to_string(exchange_.version_vector()[origin]) + " of " +
                 std::to_string((*drain_targets_)[origin]) + ")";
  return core::RuntimeError("timed out draining updates from" +
                            (missing.empty() ? std::string(" the relay queues") : missing));
}

}  // namespace gradshare::train
