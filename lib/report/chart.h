// chart.h: a line chart described (ChartSpec) and laid out on a canvas (ChartLayout): axis
// ranges, ticks and their labels, the series and event markers in canvas coordinates, the
// legend and notes. svg_chart.h and png_chart.h draw the same layout.
#pragma once

#include <string>
#include <vector>

#include "report/run_data.h"  // Point

namespace gradshare::report {

enum class Stroke { kSolid, kDashed, kDotted };

struct Series {
  std::string label;
  std::string color;  // "#rrggbb"
  Stroke stroke = Stroke::kSolid;
  std::vector<Point> points;
};

// A vertical line across the plot at x (an event on a time axis).
struct Marker {
  double x = 0;
  std::string color;
  std::string label;    // the legend entry, one per distinct label
  std::string tooltip;  // what happened, shown on hover in the HTML
};

struct ChartSpec {
  std::string id;  // names the PNG file and the HTML element: letters, digits, '-'
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;        // decades; values <= 0 are left out
  bool y_from_zero = false;  // the y axis includes 0
  std::vector<Series> series;
  std::vector<Marker> markers;
  std::vector<std::string> notes;  // lines under the legend, e.g. "run-b: no data"

  bool has_data() const;
};

struct Xy {
  double x = 0;
  double y = 0;
};

struct Tick {
  double at = 0;  // canvas coordinate along its axis
  std::string label;
};

struct Polyline {
  std::string color;
  Stroke stroke = Stroke::kSolid;
  std::vector<Xy> points;
  std::string label;
};

struct LegendEntry {
  Xy at;  // left end of the sample line, on the text's baseline level
  std::string label;
  std::string color;
  Stroke stroke = Stroke::kSolid;
};

struct ChartLayout {
  std::string id;
  int width = 0;
  int height = 0;
  std::string title, x_label, y_label;
  double left = 0, top = 0, right = 0, bottom = 0;  // the plot area
  std::vector<Tick> x_ticks, y_ticks;
  std::vector<Polyline> lines;
  std::vector<Polyline> markers;  // two points each
  std::vector<std::string> marker_tooltips;
  std::vector<LegendEntry> legend;
  std::vector<std::pair<Xy, std::string>> notes;
};

// Text is laid out at this many canvas units per character (11-unit sans-serif in SVG; the PNG
// font's glyphs advance 6 units).
inline constexpr double kCharWidth = 6.5;
inline constexpr int kChartWidth = 640;
// A legend entry: a sample line this long, a gap, then its label.
inline constexpr double kLegendSample = 22;
inline constexpr double kLegendGap = 6;
inline constexpr int kChartHeight = 360;

ChartLayout lay_out(const ChartSpec& spec, int width = kChartWidth, int height = kChartHeight);

// "1.5", "0.002", "2e-05": the label of a tick `step` apart from its neighbours.
std::string tick_label(double value, double step);

}  // namespace gradshare::report
