// sharing/master_summary.cpp: what the master reports at the end of a run: the model
// equivalence check, the sharing summary, the relay counts and the staleness distribution.
#include "train/sharing/master.h"

namespace gradshare::train {

bool SharingMaster::check_equivalence() {
  double worst = 0;
  for (const auto& [worker, parameters] : drain_.models()) {
    GS_CHECK(parameters.size() == model_.parameter_count(),
             "worker " + std::to_string(worker) + " sent a wrong-sized model");
    worst = std::max(worst, relative_max_difference(parameters, model_.parameters()));
  }
  equivalence_difference_ = worst;
  // The most messages a replica applied: the master's, or a worker's received and its own.
  double applied = static_cast<double>(exchange_.stats().applied);
  for (const auto& [worker, relays] : drain_.relays())
    applied = std::max(applied, static_cast<double>(relays.transport.messages_received +
                                                    relays.published));
  const double tolerance = equivalence_tolerance(exchange_.aggregating(), applied);
  const bool equivalent = worst <= tolerance;
  char line[256];
  std::snprintf(line, sizeof line,
                "model equivalence: %d workers, max relative difference %.3e (tolerance %.1e): %s",
                static_cast<int>(drain_.drained_count()), worst, tolerance,
                equivalent ? "OK" : "FAILED");
  core::log_info(line);
  return equivalent;
}

void SharingMaster::summarize(double cpu_seconds, double wall_seconds, bool equivalent) {
  const auto& total = progress_->total();
  const double bytes_per_step =
      static_cast<double>(total.bytes) / std::max<double>(1, static_cast<double>(total.steps));
  const double dense = 4.0 * static_cast<double>(model_.parameter_count());
  const double cpu_share = cpu_seconds / std::max(wall_seconds, 1e-9);
  // The relay loop's share is what polling with back-off keeps low; evaluating the test set
  // after every epoch is separate work of the master.
  const double evaluation_share = evaluation_cpu_ / std::max(wall_seconds, 1e-9);
  const auto duplicates =
      total.duplicates + static_cast<std::int64_t>(exchange_.stats().duplicates);
  const auto rejected = total.rejected + static_cast<std::int64_t>(exchange_.stats().rejected);
  const std::int64_t applied_twice = exchange_.applied_twice() + drain_.applied_twice();
  // A new master (sharing/takeover.h) saw only the reports since it took over.
  const std::string since =
      took_over_at_ ? " since the takeover at step " + std::to_string(*took_over_at_) : "";
  char line[520];
  std::snprintf(line, sizeof line,
                "sharing summary%s: %lld steps, %lld updates, %.1f bytes/worker/step = dense/%.0f, "
                "back-pressure %lld, duplicates %lld, rejected %lld, applied twice %lld, "
                "master CPU %.1f%% of a core (%.1f%% relaying, %.1f%% evaluating epochs)",
                since.c_str(), static_cast<long long>(total.steps),
                static_cast<long long>(total.messages), bytes_per_step,
                bytes_per_step > 0 ? dense / bytes_per_step : 0.0,
                static_cast<long long>(total.backpressure), static_cast<long long>(duplicates),
                static_cast<long long>(rejected), static_cast<long long>(applied_twice),
                100.0 * cpu_share, 100.0 * (cpu_share - evaluation_share),
                100.0 * evaluation_share);
  core::log_info(line);
  // Updates are not all the links carry: each checkpoint gathers every worker's state, or
  // what of it the worker did not write to its part beside the checkpoint.
  const double steps = std::max<double>(1, static_cast<double>(total.steps));
  const double checkpoint_bytes_per_step = static_cast<double>(checkpoint_.state_bytes()) / steps;
  const double part_bytes_per_step = static_cast<double>(checkpoint_.part_bytes()) / steps;
  if (checkpoint_.started() > 0) {
    std::snprintf(line, sizeof line,
                  "checkpoints: %lld collections of the workers' state, %.1f kB to the master = "
                  "%.1f bytes/worker/step beside the updates' %.1f; the workers wrote %.1f MB "
                  "of it to their parts of the checkpoints (%.0f bytes/worker/step)",
                  static_cast<long long>(checkpoint_.started()),
                  static_cast<double>(checkpoint_.state_bytes()) / 1e3, checkpoint_bytes_per_step,
                  bytes_per_step, static_cast<double>(checkpoint_.part_bytes()) / 1e6,
                  part_bytes_per_step);
    core::log_info(line);
  }
  report::JsonLine record;
  record.add("kind", "sharing_summary")
      .add("steps", total.steps)
      .add("updates", total.messages)
      .add("bytes_per_worker_step", bytes_per_step)
      .add("checkpoint_collections", checkpoint_.started())
      .add("checkpoint_bytes_per_worker_step", checkpoint_bytes_per_step)
      .add("checkpoint_part_bytes_per_worker_step", part_bytes_per_step)
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
  if (took_over_at_) record.add("since_step", *took_over_at_);
  summarize_staleness(total, record);
  context_.metrics.write(record);
}

void SharingMaster::summarize_relays() {
  auto& relays = drain_.relays();
  const auto& stats = exchange_.stats();
  relays[0] = {0, stats.relayed, static_cast<std::int32_t>(exchange_.link_count()), 0,
               session_.plane().stats(), 0.0, stats.flushed, stats.flushed_bytes};
  int busiest = 0;
  for (const auto& [rank, r] : relays) {
    if (rank != 0 && (busiest == 0 || r.relayed > relays[busiest].relayed)) busiest = rank;
    // Each worker's steps and the wall time its reports covered: the time per step that
    // `gradshare simulate --validate` compares with.
    const auto reported = per_worker_.find(rank);
    const std::int64_t steps = reported == per_worker_.end() ? 0 : reported->second.steps;
    const double seconds = reported == per_worker_.end() ? 0.0 : reported->second.seconds;
    context_.metrics.write(
        report::JsonLine()
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
            .add("messages_received", static_cast<std::int64_t>(r.transport.messages_received))
            .add("bytes_received", static_cast<std::int64_t>(r.transport.bytes_received))
            .add("flush_messages", static_cast<std::int64_t>(r.flush_messages))
            .add("flush_bytes", static_cast<std::int64_t>(r.flush_bytes)));
  }
  char line[256];
  if (exchange_.aggregating()) {
    // Aggregating nothing is forwarded: what a relay sends is its links' sums.
    busiest = 0;
    for (const auto& [rank, r] : relays)
      if (rank != 0 && (busiest == 0 || r.transport.messages_sent >
                                            relays[busiest].transport.messages_sent))
        busiest = rank;
    const auto& master = relays[0].transport;
    const auto& worker = relays[busiest].transport;
    std::snprintf(line, sizeof line,
                  "relays (aggregating): the master sent %llu messages (%.1f MB) over %d links; "
                  "the busiest worker, rank %d, %llu (%.1f MB) over %d",
                  static_cast<unsigned long long>(master.messages_sent),
                  static_cast<double>(master.bytes_sent) / 1e6, relays[0].links, busiest,
                  static_cast<unsigned long long>(worker.messages_sent),
                  static_cast<double>(worker.bytes_sent) / 1e6, relays[busiest].links);
  } else {
    std::snprintf(line, sizeof line,
                  "relays: the master forwarded %llu message copies over %d links; the busiest "
                  "worker, rank %d, %llu over %d",
                  static_cast<unsigned long long>(relays[0].relayed), relays[0].links, busiest,
                  static_cast<unsigned long long>(relays[busiest].relayed), relays[busiest].links);
  }
  core::log_info(line);
}

void SharingMaster::summarize_staleness(const SharingReport& total, report::JsonLine& record) {
  const StalenessStats& all = total.staleness;
  std::string waited;
  for (const auto& [worker, report] : per_worker_) {
    char part[64];
    std::snprintf(part, sizeof part, "%s%d %.2fs", waited.empty() ? "" : ", ", worker,
                  report.staleness.wait_seconds);
    waited += part;
    context_.metrics.write(report::JsonLine()
                               .add("kind", "worker_staleness")
                               .add("rank", static_cast<std::int64_t>(worker))
                               .add("staleness_mean", report.staleness.mean())
                               .add("staleness_max", report.staleness.max)
                               .add("wait_seconds", report.staleness.wait_seconds)
                               .add("waits", report.staleness.waits));
  }
  const auto bound = sharing_staleness_bound(cfg_, session_.tree());
  char line[256];
  std::snprintf(line, sizeof line,
                "staleness (steps between an update's creation and its application): mean %.2f, "
                "max %lld, bound %lld; ",
                all.mean(), static_cast<long long>(all.max), static_cast<long long>(bound));
  core::log_info(std::string(line) + all.histogram_text() +
                 "; held by the bound: " + (waited.empty() ? "-" : waited));
  record.add("staleness_mean", all.mean())
      .add("staleness_max", all.max)
      .add("staleness_bound", bound)
      .add("staleness_wait_seconds", all.wait_seconds)
      .add("capped_messages", total.capped_messages);
  for (std::size_t b = 0; b < StalenessStats::kBuckets; ++b)
    record.add(std::string("staleness_") + StalenessStats::bucket_name(b), all.histogram[b]);
}

}  // namespace gradshare::train
