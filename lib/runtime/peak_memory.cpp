#include "runtime/peak_memory.h"

#include <cstdio>
#include <string>

#include "core/log.h"
#include "core/memory.h"

namespace gradshare::runtime {

namespace {
std::string megabytes(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / 1e6);
  return text;
}
}  // namespace

void log_own_peak_memory() {
  core::log_info("peak resident memory " + megabytes(core::peak_resident_bytes()));
}

void PeakMemory::summarize(RunContext& context) {
  add(context.rank, core::peak_resident_bytes());
  std::string line = "peak resident memory per rank:";
  int max_rank = context.rank;
  for (const auto& [rank, bytes] : bytes_) {
    line += (rank == bytes_.begin()->first ? " " : ", ") + std::to_string(rank) + " " +
            megabytes(bytes);
    if (bytes > bytes_[max_rank]) max_rank = rank;
    context.metrics.write(
        report::JsonLine().add("kind", "memory").add("rank", rank).add("peak_resident_bytes", bytes));
  }
  line += " (max " + megabytes(bytes_[max_rank]) + " on rank " + std::to_string(max_rank) + ")";
  core::log_info(line);
}

}  // namespace gradshare::runtime
