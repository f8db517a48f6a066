#include "sim/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <map>

#include "config/config_loader.h"
#include "codec/sparsity_band.h"
#include "core/errors.h"
#include "sim/event_simulation.h"
#include "sim/model_sample.h"
#include "sim/projection.h"
#include "sim/run_like_simulation.h"
#include "sim/run_records.h"
#include "sim/validation_aggregated.h"
#include "sim/traffic.h"
#include "topology/mode.h"

namespace gradshare::sim {

int steps_past_burst(int steps, const LinkModel& link, double step_seconds) {
  if (step_seconds <= 0) return steps;
  const double needed = std::ceil(10.0 * link.burst_seconds() / step_seconds);
  return static_cast<int>(std::clamp(needed, static_cast<double>(steps), 5000.0));
}

double band_epochs_of_run(const config::EncodingConfig& encoding, std::size_t parameter_count,
                          double run_epochs) {
  const codec::BandScale band(encoding, parameter_count);
  const double steady = band.at(std::numeric_limits<double>::infinity());
  if (encoding.warmup_epochs <= 0 || run_epochs <= 0)
    return std::numeric_limits<double>::infinity();
  constexpr int kSamples = 1000;  // the band's mean over the run, by the midpoint rule
  double mean = 0;
  for (int k = 0; k < kSamples; ++k) mean += band.at(run_epochs * (k + 0.5) / kSamples);
  mean /= kSamples;
  if (mean <= steady) return std::numeric_limits<double>::infinity();
  // The band falls with the epochs over the warm-up: the progress where it equals the mean.
  double low = 0, high = encoding.warmup_epochs;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (low + high);
    (band.at(mid) > mean ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

EventSetup event_setup_for_run(const ValidationOptions& o, const topology::Tree& tree,
                               const Placement& placement, const config::ExperimentConfig& config,
                               std::size_t parameter_count, double step_seconds) {
  EventSetup setup{tree, placement, o.link, o.cores,
                   steps_past_burst(o.steps, o.link, step_seconds)};
  setup.training_epochs = band_epochs_of_run(config.encoding, parameter_count,
                                             static_cast<double>(config.training.epochs));
  return setup;
}

namespace {

using core::UserError;

// The run's bytes and messages per rank against the traffic the tree predicts, as a table;
// how many ranks matched exactly.
int compare_traffic(const RunRecords& run, const Traffic& traffic) {
  std::printf("%5s %6s %16s %16s %16s %16s\n", "rank", "links", "bytes sent", "predicted",
              "bytes received", "predicted");
  int exact = 0;
  for (const auto& [rank, r] : run.ranks) {
    const auto& p = traffic.ranks[static_cast<std::size_t>(rank)];
    const bool same = p.sent.bytes == r.sent.bytes && p.received.bytes == r.received.bytes &&
                      p.sent.messages == r.sent.messages &&
                      p.received.messages == r.received.messages;
    exact += same ? 1 : 0;
    std::printf("%5d %6d %16.0f %16.0f %16.0f %16.0f  %s\n", rank, r.links, r.sent.bytes,
                p.sent.bytes, r.received.bytes, p.received.bytes, same ? "exact" : "DIFFERS");
  }
  std::printf("bytes and messages per rank: %d of %zu ranks exact\n", exact, run.ranks.size());
  return exact;
}

// The run's time per step against the event simulation and the flow model, with the costs
// of the real code measured in this process; `message_bytes`: the run's mean message size.
void compare_time_per_step(const ValidationOptions& o, const config::ExperimentConfig& config,
                           const RunRecords& run, const topology::Tree& tree,
                           const Placement& placement, const Traffic& traffic,
                           double message_bytes) {
  double steps = 0, seconds = 0, cpu = 0;
  for (const auto& [rank, r] : run.ranks)
    steps += r.steps, seconds += r.train_seconds, cpu += r.cpu_seconds;
  if (steps <= 0) {
    std::printf("time per step: the workers reported no steps\n");
    return;
  }
  const ModelSample sample = sample_model(config, SampleData::kConfigured, 300, 20, 16);
  const EventSetup setup =
      event_setup_for_run(o, tree, placement, config, sample.parameter_count, seconds / steps);
  const auto simulation = simulate_like_run(config, sample, setup, run, cpu / steps);
  const EventResult& events = simulation.events;
  StepCosts costs = simulation.probe.costs;
  // What the run's workers used beyond the flow model's work (MPI, TCP stack, batches,
  // reports): the run's own figure replaces the default, as its message size does.
  const auto& w = traffic.ranks[1];
  const double w_steps = std::max(run.ranks.at(1).steps, 1.0);
  const auto work =
      flow_work(costs, w.applied.messages / w_steps, w.sent.messages / w_steps, cpu / steps);
  costs.message_bytes = message_bytes;
  costs.step_overhead_seconds = work.overhead;
  // With shared cores, the master's polling loop takes the share of a core it took in the run.
  const Projection flow = project(tree, placement, costs, o.link, o.cores, run.master_cpu_share);
  // Over the workers: the wall time of their reports over their steps.
  print_times(config, sample, run, simulation, seconds / steps, flow);
  std::printf(
      "  per worker step: compute %.3f ms (real model), encode %.3f ms, apply %.2f us per "
      "message, copy %.2f us; CPU measured %.3f ms, modelled %.3f ms + %.3f ms overhead "
      "(MPI, TCP stack, batches)\n",
      1e3 * costs.compute_seconds, 1e3 * costs.encode_seconds, 1e6 * costs.apply_seconds,
      1e6 * costs.copy_seconds, 1e3 * cpu / steps, 1e3 * work.modelled, 1e3 * work.overhead);
  std::printf(
      "  event simulation: messages of %.0f bytes, %.1f ms per worker held by the bound, "
      "%.3f ms overhead per step; master CPU share in the run %.0f %%\n",
      events.costs.message_bytes, 1e3 * events.wait_seconds,
      1e3 * simulation.setup.step_overhead_seconds,
      100.0 * run.master_cpu_share);
}

}  // namespace

int validate_against_run(const ValidationOptions& o) {
  const std::filesystem::path dir(o.run_dir);
  if (!std::filesystem::is_directory(dir))
    throw UserError("simulate --validate: " + o.run_dir + " is not a run directory");
  for (const char* file : {"config.yaml", "metrics.jsonl"})
    if (!std::filesystem::is_regular_file(dir / file))
      throw UserError("simulate --validate: " + (dir / file).string() + " does not exist");
  const auto config = config::load_experiment((dir / "config.yaml").string());
  const RunRecords run = read_records(o.run_dir);
  const int ranks = run.ranks.rbegin()->first + 1;
  if (static_cast<int>(run.ranks.size()) != ranks)
    throw UserError("simulate --validate: " + o.run_dir + " has relays records of " +
                    std::to_string(run.ranks.size()) + " ranks out of " + std::to_string(ranks));
  const auto tree = topology::build_tree(config.topology, ranks);
  const Placement placement = Placement::by_node(ranks, o.nodes);
  if (topology::aggregates(config.topology, ranks))
    return validate_aggregated(o, config, run, tree, placement);
  std::vector<Flow> published(static_cast<std::size_t>(ranks));
  double messages = 0, bytes = 0;
  for (const auto& [rank, r] : run.ranks) {
    if (static_cast<int>(tree.links(rank).size()) != r.links)
      throw UserError("simulate --validate: rank " + std::to_string(rank) + " had " +
                      std::to_string(r.links) + " links, the tree of " + o.run_dir +
                      "/config.yaml gives it " + std::to_string(tree.links(rank).size()));
    published[static_cast<std::size_t>(rank)] = {r.published, r.bytes_published};
    messages += r.published;
    bytes += r.bytes_published;
  }
  const Traffic traffic = count_traffic(tree, placement, published);
  std::printf("run %s: %d workers, %s tree, %.0f messages of %.1f bytes on average\n",
              o.run_dir.c_str(), ranks - 1, tree.max_depth() > 1 ? "mesh" : "plain", messages,
              messages > 0 ? bytes / messages : 0.0);
  const int exact = compare_traffic(run, traffic);
  compare_time_per_step(o, config, run, tree, placement, traffic,
                        messages > 0 ? bytes / messages : 0.0);
  return exact == ranks ? 0 : 1;
}

}  // namespace gradshare::sim
