// html_report.h: the run report as one self-contained HTML page: inline CSS, every chart an
// inline <svg> (no scripts, fonts, images or links to anything but the PNGs beside it).
// Sections: the runs compared, the overlaid chart groups, the events, then per run its workers
// table, its encoding-debug charts and its resolved config in a <pre>.
#pragma once

#include <string>
#include <vector>

#include "report/report_charts.h"
#include "report/run_data.h"

namespace gradshare::report {

// The PNG of a chart beside the page: "<page stem>-<chart id>.png".
std::string png_name(const std::string& page_stem, const std::string& chart_id);

std::string render_html(const std::vector<RunData>& runs, const ReportCharts& charts,
                        const std::string& page_stem);

}  // namespace gradshare::report
