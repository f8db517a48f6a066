// event_simulation.h: gradient sharing run step by step in virtual time with the real code: each
// worker's real codec::Encoder turns real model updates into messages, each rank's real
// train::UpdateExchange applies, deduplicates and relays them through a comm::Relay over the
// virtual network (virtual_network.h), and each worker holds to the real staleness bound
// (train::StalenessTracker). One thread drives every rank, always the one whose clock is
// earliest.
//
// Virtual time: a worker's step costs the measured compute time of the real model
// (model_sample.h) plus the step overhead the models cannot measure (MPI, TCP stack, batches);
// every call into the real encoder and exchange costs the CPU time it really took here. With
// `cores` > 0 all ranks share that many cores, as the namespaces of the emulated cluster share
// this machine's (processor sharing: with more ranks awake than cores each runs that much
// slower); 0 gives each rank its own. A worker that waits (bound, or done) sleeps until its
// next message arrives.
// A checkpoint's state crosses the same links beside the updates (EventSetup::state_bytes): its
// pieces and their acknowledgements take their turn on a node's link like any message.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "comm/data_plane.h"
#include "config/experiment_config.h"
#include "sim/link_model.h"
#include "sim/model_sample.h"
#include "sim/projection.h"
#include "sim/traffic.h"
#include "topology/tree.h"

namespace gradshare::sim {

struct EventSetup {
  topology::Tree tree;
  Placement placement;
  LinkModel link;
  int cores = 0;
  std::int64_t steps = 40;  // per worker; the first fifth fills the pipeline and is not timed
  // Encode steps each worker's encoder takes on the updates before the simulation, unsent, so
  // that its threshold and residual are those of a run in progress, not of its first step.
  std::int64_t encoder_warm_up = 50;
  // Where the encoders' (and relays') sparsity band is, in epochs (codec::BandScale): past any
  // warm-up unless a run's validation puts it at that run's mean band (band_epochs_of_run).
  double training_epochs = std::numeric_limits<double>::infinity();
  double step_overhead_seconds = kStepOverheadSeconds;  // StepCosts::step_overhead_seconds
  // The aggregating mesh (train/sharing/aggregating_relay.h): each rank sends each link one
  // re-encoded message for all it owes it; `aggregate_wait_seconds` its wait for a quiet source.
  bool aggregate = false;
  double aggregate_wait_seconds = 0.02;
  // A checkpoint collection (sharing/checkpoint_collection.h) when > 0: once every worker is
  // past the untimed steps, each sends the master state_bytes in pieces of state_piece_bytes
  // (whole on the master's node), the next once the master's acknowledgement is back, and
  // trains on meanwhile; the workers train past `steps` until the last piece is in.
  std::size_t state_bytes = 0;
  std::size_t state_piece_bytes = std::size_t{16} << 10;
  // With shared cores: the share of a core the master's loop takes beyond what the simulation
  // charges it (a run's measured share: polling, MPI progress, the TCP stack of its relay); the
  // other ranks share the rest, as the flow model's master does (projection.h).
  double master_cpu_share = 0;
};

struct RankResult {
  std::uint64_t applied = 0;  // messages applied, own included (ExchangeStats)
  std::uint64_t relayed = 0;
  std::uint64_t published = 0;
  std::uint64_t bytes_published = 0;
  comm::TransportStats transport;
  double exchange_cpu_seconds = 0;  // CPU in the exchange (poll, publish, aggregates)
  double aggregate_cpu_seconds = 0;  // of which encoding and sending aggregates
  double encode_cpu_seconds = 0;
};

struct EventResult {
  // Mean time per step over the timed steps of every worker; with shared cores at least every
  // rank's CPU per worker step times the workers over the cores (no faster than the cores run).
  double step_seconds = 0;
  // Shared cores: every rank's CPU (the master's included) from the end of the untimed steps to
  // the first worker's last step, per worker step then.
  double cpu_seconds_per_step = 0;
  double wait_seconds = 0;  // per worker, held by the staleness bound
  std::vector<RankResult> ranks;
  std::vector<DirectedEdge> edges;  // payload bytes and messages per directed link
  std::int64_t applied_twice = 0;
  std::uint64_t backpressure = 0;     // steps whose update stayed in the residual
  // Largest |p_r - p_0| / max|p_0| after the drain (aggregating, its flush round): rounding.
  double max_replica_difference = 0;
  double aggregates_per_link_step = 0;  // aggregate messages per directed link per worker step
  double mean_aggregate_bytes = 0;
  // With a checkpoint collection: from its start to its last piece's arrival, and the mean
  // time per worker step meanwhile (with shared cores, at least step_seconds' CPU bound).
  double collection_seconds = 0;
  double collection_step_seconds = 0;
  StepCosts costs;  // compute as given; encode, message bytes, apply and copy as measured here
};

// The CPU the simulation charged a worker per step besides the step overhead: the model's
// compute and what its encoder and exchange took, per update published (mean over the workers).
// A run's CPU per worker step less this is the overhead that makes the simulation's workers
// use what the run's did.
double charged_cpu_per_step(const EventResult& result);

EventResult simulate_events(const config::ExperimentConfig& config, const ModelSample& sample,
                            const EventSetup& setup);

}  // namespace gradshare::sim
