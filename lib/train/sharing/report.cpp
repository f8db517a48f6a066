#include "train/sharing/report.h"

#include <algorithm>

#include "comm/byte_io.h"

namespace gradshare::train {

void SharingReport::add(const SharingReport& o) {
  const bool first = messages == 0 && steps == 0;
  using R = SharingReport;
  StepCounts::add(o);
  add_members(*this, o, &R::messages, &R::bytes, &R::entries, &R::sparse_messages,
              &R::bitmap_messages, &R::compressed_messages, &R::shake_ups, &R::backpressure,
              &R::relayed, &R::duplicates, &R::rejected, &R::clipped_mass, &R::sparsity_sum,
              &R::seconds, &R::capped_messages);
  staleness.add(o.staleness);
  residual_l2 = std::max(residual_l2, o.residual_l2);
  residual_max_abs = std::max(residual_max_abs, o.residual_max_abs);
  if (o.steps > 0) {
    tau_min = first ? o.tau_min : std::min(tau_min, o.tau_min);
    tau_max = first ? o.tau_max : std::max(tau_max, o.tau_max);
  }
}

}  // namespace gradshare::train
