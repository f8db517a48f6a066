// sim/run_like_simulation.h: the event simulation set up as a finished run ran, for `simulate
// --validate`. A probe with the default step overhead first measures what the simulation
// charges a worker per step (charged_cpu_per_step); the run's CPU per worker step beyond that
// becomes the overhead, and the master's measured share of a core is taken from the shared
// cores (design.md, the simulator). Then the measured time per step beside the prediction,
// steady and with the run's checkpoints.
#pragma once

#include "config/experiment_config.h"
#include "sim/event_simulation.h"
#include "sim/model_sample.h"
#include "sim/projection.h"
#include "sim/run_records.h"

namespace gradshare::sim {

struct RunLikeSimulation {
  EventSetup setup;     // with the run's overhead and master share
  EventResult probe;    // the probe's (its costs are the flow model's per-message costs)
  EventResult events;   // the prediction
};

// The flow model's work per worker step (compute, encoding, `received` messages applied and
// `sent` copied per step, at `costs`) and the run's CPU per step beyond it, its overhead.
struct FlowWork {
  double modelled = 0;
  double overhead = 0;
};
FlowWork flow_work(const StepCosts& costs, double received, double sent, double cpu_per_step);

// `setup`: the run's tree, placement, link, cores and steps (and aggregation); `cpu_per_step`:
// the run's worker CPU per step.
RunLikeSimulation simulate_like_run(const config::ExperimentConfig& config,
                                    const ModelSample& sample, EventSetup setup,
                                    const RunRecords& run, double cpu_per_step);

// The lines "time per step (RATE): measured ...; event simulation ...; flow model ..." and, when
// the run collected checkpoints, the same with them.
void print_times(const config::ExperimentConfig& config, const ModelSample& sample,
                 const RunRecords& run, const RunLikeSimulation& simulation, double measured,
                 const Projection& flow);

}  // namespace gradshare::sim
