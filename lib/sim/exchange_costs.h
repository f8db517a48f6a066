// exchange_costs.h: the CPU the simulated exchange spent per message, measured between two
// points of an event simulation (event_simulation.h) for the flow model (projection.h).
#pragma once

#include <vector>

#include "sim/projection.h"

namespace gradshare::sim {

// What a rank's exchange had done at some point of the simulation.
struct ExchangeCounts {
  double applied = 0, published = 0, sent = 0, cpu = 0, aggregate_cpu = 0;
  double aggregated = 0, aggregated_bytes = 0;
};

// Least squares of cpu = apply * applied + copy * sent over the ranks, between `from` (every
// worker past the untimed steps: one-time costs such as each encoder's threshold calibration
// left out) and `until`.
void fit_costs(const std::vector<ExchangeCounts>& from,
               const std::vector<ExchangeCounts>& until, StepCosts& costs);

// Aggregating, every rank applies and sends about one message per link, too alike for a fit:
// the CPU of encoding and sending aggregates per aggregate sent, the rest of the exchange's
// (receiving, applying, owing to the other links, owing the rank's own messages) per message
// received, as the flow model charges them; between `from` and `until` as in fit_costs.
void measure_aggregate_costs(const std::vector<ExchangeCounts>& from,
                             const std::vector<ExchangeCounts>& until, StepCosts& costs);

}  // namespace gradshare::sim
