#include "sim/simulate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "config/config_loader.h"
#include "core/errors.h"
#include "sim/event_simulation.h"
#include "sim/model_sample.h"
#include "sim/projection.h"
#include "sim/validation.h"
#include "topology/mode.h"
#include "train/sharing/gradient_sharing.h"

namespace gradshare::sim {
namespace {

using core::UserError;

struct Options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::vector<int> workers{8, 32, 128, 512, 2048, 8192, 32768};
  std::vector<std::string> topologies{"plain", "mesh"};
  LinkModel link{1e9};
  int max_children = 0;  // 0: the config's topology.max_children
  int nodes = 0;         // 0: one rank per node
  int cores = 0;         // 0: a core per rank
  int steps = 40;
  int events_up_to = 64;
  double aggregate_wait_seconds = 0.02;
  double step_overhead_seconds = kStepOverheadSeconds;
  std::string csv;
  std::string validate;
};

int parse_int(const std::string& flag, const std::string& value, int low, int high) {
  char* end = nullptr;
  const long number = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || number < low || number > high)
    throw UserError("simulate: " + flag + " needs an integer in " + std::to_string(low) + ".." +
                    std::to_string(high) + ", got '" + value + "'");
  return static_cast<int>(number);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto comma = std::min(text.find(',', begin), text.size());
    parts.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return parts;
}

// A --OPTION value in milliseconds, 0..max; returned in seconds.
double parse_milliseconds(const std::string& option, const std::string& value, int max) {
  char* end = nullptr;
  const double ms = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !(ms >= 0 && ms <= max))
    throw UserError("simulate: " + option + " needs milliseconds in 0.." + std::to_string(max) +
                    ", got '" + value + "'");
  return ms * 1e-3;
}

// After the options are read: --link-burst (tbf's follows the rate) and what goes together.
void check_options(Options& o, const std::string& burst) {
  if (burst == "tbf") {
    o.link.burst_bytes = cluster_local_burst_bytes(o.link.bits_per_second);
  } else {
    char* end = nullptr;
    o.link.burst_bytes = static_cast<double>(std::strtol(burst.c_str(), &end, 10));
    if (burst.empty() || *end != '\0' || o.link.burst_bytes < 0 || o.link.burst_bytes > 1 << 30)
      throw UserError("simulate: --link-burst takes bytes (0.." + std::to_string(1 << 30) +
                      ") or tbf, got '" + burst + "'");
  }
  if (o.validate.empty() && o.config_path.empty())
    throw UserError(
        "simulate: missing CONFIG.yaml (or --validate RUN_DIR; see gradshare simulate --help)");
  if (!o.validate.empty() && !o.config_path.empty())
    throw UserError("simulate: --validate RUN_DIR takes the run's own config, not '" +
                    o.config_path + "'");
  if (!o.csv.empty()) {
    const auto parent = std::filesystem::absolute(o.csv).parent_path();
    if (!std::filesystem::is_directory(parent))
      throw UserError("simulate: --csv " + o.csv + ": folder " + parent.string() +
                      " does not exist");
  }
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  std::string burst = "0";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      if (o.config_path.empty() && arg.find('=') == std::string::npos)
        o.config_path = arg;
      else
        o.overrides.push_back(arg);
      continue;
    }
    if (i + 1 >= args.size()) throw UserError("simulate: " + arg + " needs a value");
    const std::string& value = args[++i];
    if (arg == "--workers") {
      o.workers.clear();
      for (const auto& part : split(value)) o.workers.push_back(parse_int(arg, part, 1, 1 << 20));
      std::sort(o.workers.begin(), o.workers.end());
    } else if (arg == "--topology") {
      o.topologies = split(value);
      for (const auto& t : o.topologies)
        if (t != "plain" && t != "mesh" && t != "aggregate")
          throw UserError(
              "simulate: --topology takes plain, mesh, aggregate or a list of them, got '" + t +
              "'");
    } else if (arg == "--link") {
      o.link.bits_per_second = parse_rate(value, "simulate: --link");
    } else if (arg == "--link-burst") {
      burst = value;
    } else if (arg == "--message-overhead") {
      o.link.message_overhead_bytes = parse_int(arg, value, 0, 1 << 20);
    } else if (arg == "--max-children") {
      o.max_children = parse_int(arg, value, 1, 1024);
    } else if (arg == "--nodes") {
      o.nodes = parse_int(arg, value, 1, 1 << 20);
    } else if (arg == "--cores") {
      o.cores = parse_int(arg, value, 1, 1 << 20);
    } else if (arg == "--steps") {
      o.steps = parse_int(arg, value, 10, 100000);
    } else if (arg == "--events-up-to") {
      o.events_up_to = parse_int(arg, value, 0, 4096);
    } else if (arg == "--step-overhead") {
      o.step_overhead_seconds = parse_milliseconds(arg, value, 10000);
    } else if (arg == "--aggregate-wait") {
      o.aggregate_wait_seconds = parse_milliseconds(arg, value, 100000);
    } else if (arg == "--csv") {
      o.csv = value;
    } else if (arg == "--validate") {
      o.validate = value;
    } else {
      throw UserError("simulate: unknown option '" + arg + "' (see gradshare simulate --help)");
    }
  }
  check_options(o, burst);
  return o;
}


// "aggregate" is the mesh's tree with aggregating relays.
topology::Tree tree_for(const std::string& mode, int workers, int max_children) {
  if (mode == "plain") return topology::build_plain(workers + 1);
  return topology::build_mesh(workers + 1, max_children, 64);
}

Projection project_for(const Options& o, const std::string& mode, int workers, int max_children,
                       const StepCosts& costs) {
  return project(tree_for(mode, workers, max_children), Placement::by_node(workers + 1, o.nodes),
                 costs, o.link, o.cores, 0.0, mode == "aggregate");
}

void check_event_memory(const Options& o, const ModelSample& sample, int workers) {
  // Each replica holds its parameters, each worker its residual and the update it encodes.
  const double bytes = 12.0 * static_cast<double>(sample.parameter_count) * (workers + 1);
  if (bytes > 8.0 * (1ull << 30))
    throw UserError("simulate: --events-up-to " + std::to_string(o.events_up_to) + " would hold " +
                    std::to_string(static_cast<int>(bytes / (1ull << 30))) +
                    " GiB of replicas for " + std::to_string(workers) +
                    " workers of this model: lower it");
}

std::string describe(const Options& o) {
  std::string text = rate_name(o.link.bits_per_second) + " links, ";
  text += o.nodes > 0 ? std::to_string(o.nodes) + " nodes (ranks by node)" : "a node per rank";
  text += o.cores > 0 ? ", " + std::to_string(o.cores) + " shared cores" : ", a core per rank";
  return text;
}

struct Row {
  std::string topology;
  Projection projection;
  int depth = 0;
  std::optional<EventResult> events;
};

// The smallest worker count in (good, bad] whose efficiency is under one half.
int saturation_point(const Options& o, const std::string& mode, int max_children,
                     const StepCosts& costs, int good, int bad) {
  while (bad - good > 1) {
    const int middle = good + (bad - good) / 2;
    if (project_for(o, mode, middle, max_children, costs).efficiency < 0.5)
      bad = middle;
    else
      good = middle;
  }
  return bad;
}

void print_rows(const std::vector<Row>& rows) {
  std::printf("%-9s %8s %5s %10s %10s %6s %12s %12s %11s %10s %11s %10s %10s  %s\n", "tree",
              "workers", "depth", "step ms", "step ms", "eff.", "master", "busiest", "busiest",
              "busiest", "leaf in", "master", "inner", "bottleneck");
  std::printf("%-9s %8s %5s %10s %10s %6s %12s %12s %11s %10s %11s %10s %10s\n", "", "", "",
              "(events)", "(flow)", "", "copies/step", "relay/step", "link kB", "link msgs",
              "kB/step", "CPU ms", "CPU ms");
  for (const auto& row : rows) {
    const auto& p = row.projection;
    char events[32] = "-";
    if (row.events) std::snprintf(events, sizeof events, "%.3f", 1e3 * row.events->step_seconds);
    std::printf(
        "%-9s %8d %5d %10s %10.3f %5.0f%% %12.0f %12.0f %11.1f %10.0f %11.1f %10.3f %10.3f  %s\n",
        row.topology.c_str(), p.workers, row.depth, events, 1e3 * p.step_seconds,
        100.0 * p.efficiency, p.master_copies, p.busiest_relay_copies, p.max_link_bytes / 1e3,
        p.max_link_messages, p.leaf_in_bytes / 1e3, 1e3 * p.master_cpu_seconds,
        1e3 * p.inner_sharing_cpu_seconds, p.bottleneck.c_str());
  }
  std::printf(
      "per step: copies and messages of the busiest rank or node link (one direction); CPU "
      "for applying and relaying, without compute\n");
}

void write_csv(const std::string& path, const std::vector<Row>& rows, const Options& o) {
  std::ofstream out(path);
  out << "topology,workers,depth,link_bits_per_second,step_seconds_events,step_seconds_flow,"
         "efficiency,bottleneck,master_cpu_seconds,inner_sharing_cpu_seconds,master_copies,"
         "busiest_relay_copies,max_link_bytes,max_link_messages,leaf_in_bytes\n";
  for (const auto& row : rows) {
    const auto& p = row.projection;
    out << row.topology << ',' << p.workers << ',' << row.depth << ',' << o.link.bits_per_second
        << ',' << (row.events ? std::to_string(row.events->step_seconds) : "") << ','
        << p.step_seconds << ',' << p.efficiency << ",\"" << p.bottleneck << "\","
        << p.master_cpu_seconds << ',' << p.inner_sharing_cpu_seconds << ',' << p.master_copies
        << ',' << p.busiest_relay_copies << ',' << p.max_link_bytes << ',' << p.max_link_messages
        << ',' << p.leaf_in_bytes << '\n';
  }
  if (!out) throw core::RuntimeError("simulate: could not write " + path);
}

// The event simulations of one tree: of each worker count up to --events-up-to, or of one
// calibration size when there is none; the costs per message are the largest's.
struct TreeEvents {
  std::vector<int> sizes;
  std::vector<EventResult> results;
  bool calibrated = false;
  StepCosts costs;
};

TreeEvents simulate_tree(const Options& o, const config::ExperimentConfig& config,
                         const ModelSample& sample, const std::string& mode, int max_children) {
  TreeEvents tree;
  for (int w : o.workers)
    if (w <= o.events_up_to) tree.sizes.push_back(w);
  tree.calibrated = tree.sizes.empty();
  if (tree.calibrated) tree.sizes.push_back(std::min(8, std::max(o.events_up_to, 2)));
  for (int w : tree.sizes) {
    check_event_memory(o, sample, w);
    EventSetup setup{tree_for(mode, w, max_children), Placement::by_node(w + 1, o.nodes), o.link,
                     o.cores, o.steps};
    setup.step_overhead_seconds = o.step_overhead_seconds;
    setup.aggregate = mode == "aggregate";
    setup.aggregate_wait_seconds = o.aggregate_wait_seconds;
    const EventResult& result = tree.results.emplace_back(simulate_events(config, sample, setup));
    tree.costs = result.costs;
    double applied = 0;
    for (const auto& rank : result.ranks)
      applied = std::max(applied, static_cast<double>(rank.applied));
    if (result.applied_twice != 0 ||
        result.max_replica_difference > train::equivalence_tolerance(setup.aggregate, applied))
      throw core::RuntimeError("simulate: the event simulation of " + std::to_string(w) +
                               " workers (" + mode + ") ended with replicas that differ: a defect");
  }
  return tree;
}

void print_tree_events(const Options& o, const std::string& mode, const TreeEvents& tree) {
  const EventResult& largest = tree.results.back();
  if (mode == "aggregate")
    std::printf(
        "aggregate (%d workers): %.2f messages per link per worker step, %.2f ms per step held "
        "by the staleness bound; after the drain's flush round replicas differ by up to %.2e "
        "of max|p|\n",
        tree.sizes.back(), largest.aggregates_per_link_step,
        1e3 * largest.wait_seconds / static_cast<double>(o.steps), largest.max_replica_difference);
  std::printf(
      "%s: per message %.2f us to apply, %.2f us per copy sent; encode %.3f ms; "
      "%.0f bytes per message (real codec, %s)\n",
      mode.c_str(), 1e6 * tree.costs.apply_seconds, 1e6 * tree.costs.copy_seconds,
      1e3 * tree.costs.encode_seconds, tree.costs.message_bytes,
      tree.calibrated ? "calibration run" : "largest event simulation");
}

int project_command(const Options& o) {
  const auto config = config::load_experiment(o.config_path, o.overrides);
  const int max_children =
      o.max_children > 0 ? o.max_children : static_cast<int>(config.topology.max_children);
  const ModelSample sample = sample_model(config, SampleData::kConfigured, 300, 20, 16);
  std::printf(
      "model: %zu parameters, %.3f ms of CPU per step (batch %lld, median of 20 steps "
      "after 300 on the training data)\n",
      sample.parameter_count, 1e3 * sample.compute_seconds,
      static_cast<long long>(config.training.batch_size));
  std::printf(
      "network: %s; mesh fan-out %d; %d simulated steps per worker; %.2f ms of CPU per "
      "worker step for MPI, the TCP stack and batches (--step-overhead)\n\n",
      describe(o).c_str(), max_children, o.steps, 1e3 * o.step_overhead_seconds);
  std::vector<Row> rows;
  for (const auto& mode : o.topologies) {
    const TreeEvents tree = simulate_tree(o, config, sample, mode, max_children);
    const StepCosts& costs = tree.costs;
    print_tree_events(o, mode, tree);
    std::vector<Row> own;
    int good = 0, bad = 0;
    for (int w : o.workers) {
      Row row;
      row.topology = mode;
      row.depth = tree_for(mode, w, max_children).max_depth();
      row.projection = project_for(o, mode, w, max_children, costs);
      for (std::size_t i = 0; i < tree.sizes.size(); ++i)
        if (tree.sizes[i] == w && !tree.calibrated) row.events = tree.results[i];
      if (row.projection.efficiency >= 0.5)
        good = w;
      else if (bad == 0)
        bad = w;
      own.push_back(row);
    }
    rows.insert(rows.end(), own.begin(), own.end());
    if (bad == 0) {
      std::printf("%s: efficiency stays at or above 50 %% up to %d workers\n\n", mode.c_str(),
                  o.workers.back());
    } else {
      const int at = saturation_point(o, mode, max_children, costs, good, bad);
      const auto p = project_for(o, mode, at, max_children, costs);
      std::printf("%s: saturates at %d workers (efficiency under 50 %%): %s\n\n", mode.c_str(), at,
                  p.bottleneck.c_str());
    }
  }
  print_rows(rows);
  if (!o.csv.empty()) {
    write_csv(o.csv, rows, o);
    std::printf("\nwrote %s\n", o.csv.c_str());
  }
  return 0;
}

}  // namespace

int simulate_command(const std::vector<std::string>& args) {
  const Options o = parse(args);
  if (!o.validate.empty()) {
    ValidationOptions v{o.validate, o.link, o.nodes, o.cores, o.steps};
    return validate_against_run(v);
  }
  return project_command(o);
}

}  // namespace gradshare::sim
