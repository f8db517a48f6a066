// sim/validation_aggregated.h: `gradshare simulate --validate` for a run with topology.aggregate.
// What an aggregating relay sends depends on when its sources speak, so no byte count can be
// predicted exactly: each rank's messages and bytes (the flush rounds' finals apart) are printed,
// the messages per link per worker step and their size set beside the event simulation's, and
// the time per step predicted by the event simulation and the flow model as for a relaying run.
#pragma once

#include "config/experiment_config.h"
#include "sim/run_records.h"
#include "sim/traffic.h"
#include "sim/validation.h"
#include "topology/tree.h"

namespace gradshare::sim {

// Prints the comparison; returns 0.
int validate_aggregated(const ValidationOptions& options, const config::ExperimentConfig& config,
                        const RunRecords& run, const topology::Tree& tree,
                        const Placement& placement);

}  // namespace gradshare::sim
