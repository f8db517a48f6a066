#include "train/sharing/encoding_debug.h"

namespace gradshare::train {

report::JsonLine encoding_debug_record(int rank, std::int64_t master_step, const SharingReport& report) {
  const auto per = [](double total, std::int64_t count) {
    return count > 0 ? total / static_cast<double>(count) : 0.0;
  };
  return report::JsonLine()
      .add("kind", "encoding_debug")
      .add("rank", static_cast<std::int64_t>(rank))
      .add("step", master_step)
      .add("steps", report.steps)
      .add("tau_min", static_cast<double>(report.tau_min))
      .add("tau_max", static_cast<double>(report.tau_max))
      .add("sparsity", per(report.sparsity_sum, report.messages))
      .add("messages", report.messages)
      .add("sparse", report.sparse_messages)
      .add("bitmap", report.bitmap_messages)
      .add("compressed", report.compressed_messages)
      .add("capped", report.capped_messages)
      .add("backpressure", report.backpressure)
      .add("bytes", report.bytes)
      .add("bytes_per_step", per(static_cast<double>(report.bytes), report.steps))
      .add("residual_l2", static_cast<double>(report.residual_l2))
      .add("residual_max_abs", static_cast<double>(report.residual_max_abs))
      .add("clipped_mass", report.clipped_mass)
      .add("shake_ups", report.shake_ups)
      .add("staleness_mean", report.staleness.mean())
      .add("staleness_max", report.staleness.max);
}

}  // namespace gradshare::train
