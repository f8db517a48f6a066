// simulate_command.h: `gradshare simulate`: projections of gradient sharing to many workers, and
// their validation against a real run.
//
//   gradshare simulate CONFIG.yaml [--workers 8,64,...] [--link 1gbit] [--topology plain,mesh]
//                      [--max-children 8] [--nodes K] [--cores C] [--steps S]
//                      [--events-up-to N] [--csv OUT.csv] [key.path=value ...]
//   gradshare simulate --validate RUN_DIR [--link RATE] [--nodes K] [--cores C] [--steps S]
//
// Projection: the real model of CONFIG gives the compute time per step (model_sample.h); for
// every worker count up to --events-up-to the real codec, update exchange and relay run in
// virtual time (event_simulation.h), which also measures what applying and relaying a message
// costs; the flow model (traffic.h, projection.h) carries those costs to every worker count.
// Validation: the run's own tree, message sizes and per-rank transport counters (its `relays`
// records); prints the predicted and measured bytes of every rank and the time per step.
#pragma once

#include <string>
#include <vector>

namespace gradshare::sim {

// Arguments after "simulate"; returns the exit code. Bad arguments: core::UserError.
int simulate_command(const std::vector<std::string>& args);

}  // namespace gradshare::sim
