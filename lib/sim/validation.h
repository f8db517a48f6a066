// validation.h: the simulator checked against a real gradient-sharing run.
//
// From RUN_DIR: config.yaml (the model, encoding, topology) and metrics.jsonl: the `relays`
// record of every rank (links, own messages and their bytes, the data plane's messages and
// bytes sent and received) and the `step` records (time per step). The flow model, given the
// messages each worker really published, predicts what every rank sent and received: it must
// match the data planes' counters exactly. The time per step is predicted twice, by the event
// simulation and by the flow model with the run's mean message size, on the link, placement and
// cores given (they must describe the machine the run used), and compared with the run's; the
// event simulation's figure once more with the run's checkpoint collections (checkpoint_time.h).
// A run with topology.aggregate is compared as sim/validation_aggregated.h says.
#pragma once

#include <cstddef>
#include <string>

#include "config/experiment_config.h"
#include "sim/event_simulation.h"
#include "sim/link_model.h"
#include "topology/tree.h"

namespace gradshare::sim {

struct ValidationOptions {
  std::string run_dir;
  LinkModel link;
  int nodes = 0;  // 0: a node per rank
  int cores = 0;  // 0: a core per rank
  int steps = 40;
};

// The event simulation's steps per worker for a run whose steps took `step_seconds`: at least
// `steps`, and enough that the untimed fifth lasts two of the links' bursts, so the timed steps
// see each link's steady rate as the run's thousands of steps did, not a token bucket still
// full (at 10 Mbit/s scripts/cluster-local's burst is 0.21 s: 40 steps of 3 ms fit inside it,
// and an aggregating run's link-bound steps came out 34 % faster than measured). At most 5000.
int steps_past_burst(int steps, const LinkModel& link, double step_seconds);

// The training progress, in epochs, whose sparsity band (codec::BandScale) is the mean band of
// a run of `run_epochs` epochs: a short run is mostly the warm-up, whose messages are denser
// than the steady ones the event simulation would otherwise encode (2-epoch runs of the shipped
// MLP: 580 B per message on average against 274 B over 15 epochs). Infinity (past the warm-up)
// when there is none.
double band_epochs_of_run(const config::EncodingConfig& encoding, std::size_t parameter_count,
                          double run_epochs);

// The event simulation that stands for a run (`step_seconds`: its time per worker step): the
// options' link and cores, steps_past_burst's steps, the run's mean band (band_epochs_of_run).
EventSetup event_setup_for_run(const ValidationOptions& o, const topology::Tree& tree,
                               const Placement& placement, const config::ExperimentConfig& config,
                               std::size_t parameter_count, double step_seconds);

// Prints the comparison; returns 0 when every rank's bytes match (aggregating: 0), 1 otherwise. core::UserError
// for a run directory without the records needed.
int validate_against_run(const ValidationOptions& options);

}  // namespace gradshare::sim
