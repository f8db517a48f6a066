// downpour/end_of_run.h: the Downpour master's checks and summary once every worker has pulled
// the servers' final model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "train/downpour/protocol.h"
#include "runtime/run_context.h"

namespace gradshare::train {

// Largest |a - b| and whether the two are bit-identical.
struct Comparison {
  double max_difference = 0;
  bool identical = true;
};
Comparison compare(std::span<const float> a, std::span<const float> b);
// The least alike of the workers' final models and the servers' `parameters`.
Comparison least_alike(const std::map<int, DownpourFinalModel>& finals,
                       std::span<const float> parameters);
// Slots (a worker on a shard) where a server applied another number of pushes than the worker
// posted (`applied`: per shard, per worker index), each logged: 0 when every push was applied
// exactly once.
int mismatched_slots(const std::map<int, DownpourFinalModel>& finals,
                     const std::vector<std::vector<std::uint64_t>>& applied,
                     const DownpourLayout& layout);

// What the end of the run found.
struct EndChecks {
  std::uint64_t versions = 0;  // pushes applied over all shards
  int workers_compared = 0;    // final models compared with the servers'
  Comparison worst;            // the least alike of them
  int mismatched_slots = 0;    // (worker, shard) slots not applied exactly once
};

// Logs the consistency and push lines and the summary, and writes the downpour_summary record
// (`total`: every worker's figures; `parameters`: the model's size).
void summarize_downpour(runtime::RunContext& context, const DownpourReport& total,
                        const DownpourLayout& layout, std::size_t parameters,
                        const EndChecks& checks);

}  // namespace gradshare::train
