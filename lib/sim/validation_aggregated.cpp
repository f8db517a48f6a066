#include "sim/validation_aggregated.h"

#include <algorithm>
#include <cstdio>

#include "sim/event_simulation.h"
#include "sim/model_sample.h"
#include "sim/projection.h"
#include "sim/run_like_simulation.h"

namespace gradshare::sim {

namespace {

// Messages and bytes besides the flush rounds' finals.
Flow aggregates_sent(const RankRecord& r) {
  return {r.sent.messages - r.flushed.messages, r.sent.bytes - r.flushed.bytes};
}

}  // namespace

int validate_aggregated(const ValidationOptions& o, const config::ExperimentConfig& config,
                        const RunRecords& run, const topology::Tree& tree,
                        const Placement& placement) {
  std::printf("%5s %6s %14s %14s %14s %14s\n", "rank", "links", "aggregates", "bytes",
              "finals", "final bytes");
  double messages = 0, bytes = 0, steps = 0, seconds = 0, cpu = 0, workers = 0;
  for (const auto& [rank, r] : run.ranks) {
    const Flow sent = aggregates_sent(r);
    std::printf("%5d %6d %14.0f %14.0f %14.0f %14.0f\n", rank, r.links, sent.messages, sent.bytes,
                r.flushed.messages, r.flushed.bytes);
    messages += sent.messages;
    bytes += sent.bytes;
    steps += r.steps, seconds += r.train_seconds, cpu += r.cpu_seconds;
    workers += rank > 0 ? 1 : 0;
  }
  if (steps <= 0 || messages <= 0) {
    std::printf("the workers reported no steps or the relays no aggregates\n");
    return 0;
  }
  const double worker_steps = steps / workers;
  const double directed_links = 2.0 * (static_cast<double>(tree.size()) - 1.0);
  const double per_link_step = messages / directed_links / worker_steps;
  const double message_bytes = bytes / messages;

  const ModelSample sample = sample_model(config, SampleData::kConfigured, 300, 20, 16);
  EventSetup setup =
      event_setup_for_run(o, tree, placement, config, sample.parameter_count, seconds / steps);
  setup.aggregate = true;
  setup.aggregate_wait_seconds = config.topology.aggregate_wait_ms / 1000.0;
  const auto simulation = simulate_like_run(config, sample, setup, run, cpu / steps);
  const EventResult& events = simulation.events;
  StepCosts costs = simulation.probe.costs;
  // What the run's workers used beyond the flow model's work, as for a relaying run: worker 1's
  // CPU per step less compute, encoding, the messages it received and the aggregates it sent.
  const auto& w = run.ranks.at(1);
  const double w_steps = std::max(w.steps, 1.0);
  const auto work = flow_work(costs, w.received.messages / w_steps,
                              aggregates_sent(w).messages / w_steps, cpu / steps);
  costs = events.costs;
  costs.step_overhead_seconds = work.overhead;
  costs.message_bytes = per_worker_aggregate_bytes(tree, message_bytes, costs.max_message_bytes);
  costs.aggregates_per_link_step = per_link_step;
  const Projection flow =
      project(tree, placement, costs, o.link, o.cores, run.master_cpu_share, /*aggregate=*/true);
  std::printf(
      "aggregates: measured %.2f messages per link per worker step of %.0f bytes; event "
      "simulation %.2f of %.0f bytes\n",
      per_link_step, message_bytes, events.aggregates_per_link_step, events.mean_aggregate_bytes);
  print_times(config, sample, run, simulation, seconds / steps, flow);
  std::printf(
      "  per worker step: compute %.3f ms (real model), encode %.3f ms, %.2f us per message "
      "received, %.2f us per aggregate sent; CPU measured %.3f ms, modelled %.3f ms + %.3f ms "
      "overhead (event simulation: %.3f ms overhead; master CPU share in the run %.0f %%)\n",
      1e3 * costs.compute_seconds, 1e3 * costs.encode_seconds, 1e6 * costs.apply_seconds,
      1e6 * costs.copy_seconds, 1e3 * cpu / steps, 1e3 * work.modelled, 1e3 * work.overhead,
      1e3 * simulation.setup.step_overhead_seconds, 100.0 * run.master_cpu_share);
  return 0;
}

}  // namespace gradshare::sim
