// report_charts.h: which charts the run report draws and the data of each, for one or several
// runs overlaid (one colour per run; train solid, test dashed, validation dotted):
//   training:       loss and accuracy against time and against step
//   communication:  samples/s, τ range, sparsity, bytes per worker per step, staleness,
//                   back-pressure, against time
//   per run, with logging.encoding_debug: τ, sparsity, residual, bytes, clipped mass,
//   staleness and back-pressure of every worker (one colour per worker) against step.
// Time charts mark the runs' events (checkpoints, recoveries, resizes, resumes, stops). A chart
// no run has data for is left out and named in `absent`; a run without data for a chart is
// named in the chart's notes.
#pragma once

#include <string>
#include <vector>

#include "report/chart.h"
#include "report/run_data.h"

namespace gradshare::report {

struct ChartGroup {
  std::string heading;
  std::vector<ChartSpec> charts;
  std::vector<std::string> absent;  // titles of the charts left out for lack of data
};

struct ReportCharts {
  std::vector<ChartGroup> overlay;  // training, communication
  std::vector<ChartGroup> per_run;  // encoding debug, one group per run (empty without records)
};

ReportCharts build_charts(const std::vector<RunData>& runs);

// The colour of run i (and of worker i in per-worker charts).
const std::string& series_color(std::size_t index);
// The colour of an event kind's lines.
std::string event_color(const std::string& kind);

}  // namespace gradshare::report
