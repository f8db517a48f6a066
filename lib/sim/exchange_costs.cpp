// exchange_costs.cpp: fit_costs and measure_aggregate_costs.
#include "sim/exchange_costs.h"

#include <algorithm>

namespace gradshare::sim {

void fit_costs(const std::vector<ExchangeCounts>& from,
               const std::vector<ExchangeCounts>& until, StepCosts& costs) {
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const double a = until[i].applied - from[i].applied, b = until[i].sent - from[i].sent,
                 y = until[i].cpu - from[i].cpu;
    aa += a * a, ab += a * b, bb += b * b, ay += a * y, by += b * y;
  }
  const double det = aa * bb - ab * ab;
  if (det > 1e-9 * aa * bb) {
    costs.apply_seconds = std::max((ay * bb - by * ab) / det, 0.0);
    costs.copy_seconds = std::max((by * aa - ay * ab) / det, 0.0);
  } else {  // every rank in the same proportion: charge it all to the applies
    costs.apply_seconds = aa > 0 ? ay / aa : 0.0;
    costs.copy_seconds = 0.0;
  }
}

void measure_aggregate_costs(const std::vector<ExchangeCounts>& from,
                             const std::vector<ExchangeCounts>& until, StepCosts& costs) {
  double received = 0, sent = 0, apply_cpu = 0, send_cpu = 0;
  for (std::size_t i = 0; i < from.size(); ++i) {
    received += (until[i].applied - until[i].published) - (from[i].applied - from[i].published);
    sent += until[i].sent - from[i].sent;
    send_cpu += until[i].aggregate_cpu - from[i].aggregate_cpu;
    apply_cpu += (until[i].cpu - from[i].cpu) - (until[i].aggregate_cpu - from[i].aggregate_cpu);
  }
  costs.apply_seconds = received > 0 ? apply_cpu / received : 0.0;
  costs.copy_seconds = sent > 0 ? send_cpu / sent : 0.0;
}

}  // namespace gradshare::sim
