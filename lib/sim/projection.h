// projection.h: time per step of gradient sharing on a tree, from the exact traffic of one step
// (traffic.h) and the measured cost of each piece of work (StepCosts).
//
// Asynchronous sharing with a staleness bound runs as a pipeline: in steady state every worker
// takes one step per T seconds, and T is set by the busiest resource over one step:
//   - a rank's CPU: a worker's compute + encode, and on every rank the messages it applies and
//     the copies it hands to links (relayed and own);
//   - a node's network link, each direction: the wire time of what crosses it (link_model.h);
//   - with `cores` > 0 (ranks sharing one machine, as on the emulated cluster), the CPU of all
//     ranks together over the cores; a master whose polling loop keeps `master_cpu_share` of a
//     core busy (measured in a run's sharing summary) leaves the workers cores - share.
// The bound keeps the workers within a few steps of each other, so the slowest resource paces
// them all. Efficiency = T1 / T, with T1 = compute + encode + step overhead, a worker's step
// with no peers: how much of a lone worker's speed each worker keeps (scaling efficiency).
#pragma once

#include <string>

#include "sim/link_model.h"
#include "sim/traffic.h"
#include "topology/tree.h"

namespace gradshare::sim {

// Measured from the real model and the real codec, update exchange and relay (step_costs.h,
// event_simulation.h).
struct StepCosts {
  double compute_seconds = 0;  // forward, backward and optimizer on one batch
  double encode_seconds = 0;   // one message from one update (residual, threshold, encoding)
  double message_bytes = 0;    // mean message payload
  double apply_seconds = 0;    // CPU per message applied (parse, dedupe, apply, keep)
  double copy_seconds = 0;     // CPU per copy handed to a link (relay queue, ring write)
  // CPU per worker step besides the above: MPI progress, the TCP stack, gathering the batch,
  // reports. Not measurable in one process; kStepOverheadSeconds is what the workers of the
  // emulated cluster used beyond the modelled work (scripts/bench/simulator_validation).
  double step_overhead_seconds = 0;
  // Aggregating: message_bytes is per worker a message carries, up to this (a link's cap with the
  // header; 0: no limit), and a link sends this many messages per worker step (measured: under
  // 1 when a message waits for several steps' content, over when sources speak apart).
  double max_message_bytes = 0;
  double aggregates_per_link_step = 1;
};

inline constexpr double kStepOverheadSeconds = 0.5e-3;

struct Projection {
  int workers = 0;
  double step_seconds = 0;
  double efficiency = 0;                  // lone worker's step / step_seconds
  std::string bottleneck;                 // what sets step_seconds
  double master_cpu_seconds = 0;          // per step
  double busiest_worker_cpu_seconds = 0;  // per step, compute included
  int busiest_worker = 0;
  double master_copies = 0;              // message copies the master sends per step
  double busiest_relay_copies = 0;       // most copies relayed by one worker per step
  double inner_sharing_cpu_seconds = 0;  // the busiest relaying worker's applies and copies
  double max_link_bytes = 0;             // the busiest node link, one direction, payload bytes
  double max_link_messages = 0;
  double leaf_in_bytes = 0;  // what one leaf worker receives per step
};

// aggregate: the aggregating mesh (count_aggregated_step_traffic: message_bytes per worker an
// aggregate carries, up to max_message_bytes, aggregates_per_link_step of them per link;
// copy_seconds per aggregate sent with its encoding).
Projection project(const topology::Tree& tree, const Placement& placement, const StepCosts& costs,
                   const LinkModel& link, int cores, double master_cpu_share = 0.0,
                   bool aggregate = false);

}  // namespace gradshare::sim
