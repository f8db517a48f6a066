// png_chart.h: a laid-out chart (chart.h) drawn into a Bitmap, `scale` pixels per canvas unit,
// with the same elements as the SVG: grid, frame, ticks, labels (5x7 bitmap font, ASCII: "τ"
// is written "tau"), event lines, series, legend and notes.
#pragma once

#include "report/chart.h"
#include "report/raster.h"

namespace gradshare::report {

Bitmap render_bitmap(const ChartLayout& layout, int scale = 2);

}  // namespace gradshare::report
