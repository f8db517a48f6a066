// peak_memory.h: the peak resident memory of every rank, at the end of a run.
//   Each worker puts core::peak_resident_bytes() into its final message to the master (its
//   strategy's done message, or PeakMemoryReport; a worker that reports again after a recovery
//   replaces its figure); Downpour's other parameter servers answer a PeakMemoryRequest. The master adds its own
//   and logs one line, "peak resident memory per rank: 0 312 MB, 1 287 MB, ... (max 312 MB on
//   rank 0)", and writes a record per rank to metrics.jsonl:
//   {"kind":"memory","rank":R,"peak_resident_bytes":B}.
#pragma once

#include <cstdint>
#include <map>

#include "runtime/run_context.h"

namespace gradshare::runtime {

// "peak resident memory 287 MB" in this rank's own log (every rank but the master, whose
// summary lists them all).
void log_own_peak_memory();

class PeakMemory {
 public:
  void add(int rank, std::int64_t bytes) { bytes_[rank] = bytes; }
  // Ranks whose figure is in.
  int ranks() const { return static_cast<int>(bytes_.size()); }
  // Adds the master's own figure, then logs and records them all.
  void summarize(RunContext& context);

 private:
  std::map<int, std::int64_t> bytes_;
};

}  // namespace gradshare::runtime
