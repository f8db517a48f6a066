// tables.h: the report's tables as text cells:
//   runs_table    one row per run: strategy, workers, epochs, steps, time, final accuracy,
//                 bytes per worker per step, checkpoints, recoveries, sessions
//   workers_table one row per worker rank of a run: its log (lines, warnings, errors), its
//                 encoding_debug totals (with logging.encoding_debug), its staleness
//                 (worker_staleness records) and the recoveries that lost or replaced it
//   events_table  every event of the runs in time order
#pragma once

#include <string>
#include <vector>

#include "report/run_data.h"

namespace gradshare::report {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

Table runs_table(const std::vector<RunData>& runs);
Table workers_table(const RunData& run);
Table events_table(const std::vector<RunData>& runs);

}  // namespace gradshare::report
