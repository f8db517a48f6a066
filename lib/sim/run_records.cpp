#include "sim/run_records.h"

#include <cstdio>

#include "core/errors.h"
#include "report/run_data.h"

namespace gradshare::sim {

using core::UserError;

// The relays records (one per rank) and the sharing summary of a run directory's metrics.
RunRecords read_records(const std::string& directory) {
  const auto data = report::RunData::load(directory);
  RunRecords run;
  for (const auto* record : data.of_kind("relays")) {
    const auto at = [&](const char* key) { return record->fields.number_at(key).value_or(0.0); };
    if (!record->fields.number_at("bytes_sent")) continue;  // a run made before the counters
    RankRecord r;
    r.links = static_cast<int>(at("links"));
    r.published = at("published");
    r.bytes_published = at("bytes_published");
    r.sent = {at("messages_sent"), at("bytes_sent")};
    r.received = {at("messages_received"), at("bytes_received")};
    r.flushed = {at("flush_messages"), at("flush_bytes")};
    r.steps = at("steps");
    r.train_seconds = at("train_seconds");
    r.cpu_seconds = at("cpu_seconds");
    run.ranks[static_cast<int>(at("rank"))] = r;
  }
  for (const auto* summary : data.of_kind("sharing_summary")) {
    const auto at = [&](const char* key) { return summary->fields.number_at(key).value_or(0.0); };
    run.master_cpu_share = at("master_cpu_share");
    run.checkpoint_collections = at("checkpoint_collections");
    run.checkpoint_state_bytes = at("checkpoint_bytes_per_worker_step") * at("steps");
  }
  if (run.ranks.empty())
    throw UserError(directory +
                    "/metrics.jsonl has no relays records with transport counters: validate "
                    "against a gradient-sharing run that ended normally (no failure), made by "
                    "this version");
  return run;
}

std::string percent(double predicted, double measured) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * (predicted - measured) / measured);
  return text;
}

void print_time_per_step(const LinkModel& link, double measured, double event_seconds,
                         const Projection& flow) {
  std::printf(
      "time per step (%s): measured %.3f ms; event simulation %.3f ms (%s); flow model "
      "%.3f ms (%s, bottleneck %s)\n",
      rate_name(link.bits_per_second).c_str(), 1e3 * measured, 1e3 * event_seconds,
      percent(event_seconds, measured).c_str(), 1e3 * flow.step_seconds,
      percent(flow.step_seconds, measured).c_str(), flow.bottleneck.c_str());
}

}  // namespace gradshare::sim
