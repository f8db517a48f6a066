// svg_chart.h: a laid-out chart (chart.h) as an inline SVG element for an HTML page: frame,
// grid, ticks, axis labels, one <polyline class="series"> per series, dashed event lines with
// their description as a hover title, legend and notes. No external references.
#pragma once

#include <string>

#include "report/chart.h"

namespace gradshare::report {

std::string render_svg(const ChartLayout& layout);

// Text safe inside XML/HTML elements and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace gradshare::report
