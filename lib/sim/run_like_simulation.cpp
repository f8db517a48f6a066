// sim/run_like_simulation.cpp: the event simulation as a run ran (run_like_simulation.h).
#include "sim/run_like_simulation.h"

#include <algorithm>

#include "sim/checkpoint_time.h"

namespace gradshare::sim {

FlowWork flow_work(const StepCosts& costs, double received, double sent, double cpu_per_step) {
  FlowWork work;
  work.modelled = costs.compute_seconds + costs.encode_seconds + costs.apply_seconds * received +
                  costs.copy_seconds * sent;
  work.overhead = std::max(cpu_per_step - work.modelled, 0.0);
  return work;
}

RunLikeSimulation simulate_like_run(const config::ExperimentConfig& config,
                                    const ModelSample& sample, EventSetup setup,
                                    const RunRecords& run, double cpu_per_step) {
  RunLikeSimulation simulation;
  simulation.probe = simulate_events(config, sample, setup);
  setup.step_overhead_seconds =
      std::max(cpu_per_step - charged_cpu_per_step(simulation.probe), 0.0);
  setup.master_cpu_share = run.master_cpu_share;
  simulation.events = simulate_events(config, sample, setup);
  simulation.setup = setup;
  return simulation;
}

void print_times(const config::ExperimentConfig& config, const ModelSample& sample,
                 const RunRecords& run, const RunLikeSimulation& simulation, double measured,
                 const Projection& flow) {
  const double predicted = simulation.events.step_seconds;
  print_time_per_step(simulation.setup.link, measured, predicted, flow);
  print_time_with_checkpoints(
      simulation.setup.link, measured,
      time_with_checkpoints(config, sample, simulation.setup, run, predicted));
}

}  // namespace gradshare::sim
