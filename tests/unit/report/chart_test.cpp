// Tests of chart layout and SVG output: ranges and ticks, the polyline of a known series,
// log scales, event lines, legend; no external references.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "report/chart.h"
#include "report/svg_chart.h"

namespace gradshare::report {
namespace {

std::string xy(double x, double y) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f,%.1f", x, y);
  return text;
}

ChartSpec line_chart() {
  ChartSpec spec;
  spec.id = "loss-step";
  spec.title = "Loss against step";
  spec.x_label = "step";
  spec.y_label = "loss";
  spec.series.push_back({"train", "#1f77b4", Stroke::kSolid, {{0, 0}, {5, 5}, {10, 10}}});
  return spec;
}

TEST(Chart, KnownSeriesGivesTheExpectedPolyline) {
  const ChartSpec spec = line_chart();
  const ChartLayout layout = lay_out(spec);
  // x 0..10 and y 0..10 (ticks 2 apart) span the plot area exactly.
  const double mid_x = (layout.left + layout.right) / 2, mid_y = (layout.top + layout.bottom) / 2;
  const std::string points = xy(layout.left, layout.bottom) + " " + xy(mid_x, mid_y) + " " +
                             xy(layout.right, layout.top);
  const std::string svg = render_svg(layout);
  EXPECT_NE(svg.find("<polyline class=\"series\" data-label=\"train\" fill=\"none\" stroke=\"#1f77b4\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("points=\"" + points + "\""), std::string::npos) << points << "\n" << svg;
  ASSERT_EQ(layout.y_ticks.size(), 6u);
  EXPECT_EQ(layout.y_ticks.front().label, "0");
  EXPECT_EQ(layout.y_ticks.back().label, "10");
  EXPECT_DOUBLE_EQ(layout.y_ticks.back().at, layout.top);
  EXPECT_EQ(svg.find("http"), std::string::npos);  // inline SVG needs no namespace URL
  EXPECT_NE(svg.find(">Loss against step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);  // legend
}

TEST(Chart, TickLabels) {
  EXPECT_EQ(tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(tick_label(0.5, 0.25), "0.50");
  EXPECT_EQ(tick_label(1500, 500), "1500");
  EXPECT_EQ(tick_label(7500, 2500), "7500");
  EXPECT_EQ(tick_label(2.5, 2.5), "2.5");
  EXPECT_EQ(tick_label(2e-5, 1e-5), "2e-05");
}

TEST(Chart, LogScaleLeavesOutNonPositiveValues) {
  ChartSpec spec = line_chart();
  spec.log_y = true;
  spec.series[0].points = {{0, 0}, {1, 1e-4}, {2, 1e-2}};
  const ChartLayout layout = lay_out(spec);
  ASSERT_EQ(layout.lines[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(layout.lines[0].points[0].y, layout.bottom);  // 1e-4 is the lowest decade
  EXPECT_DOUBLE_EQ(layout.lines[0].points[1].y, layout.top);     // 1e-2 the highest
  EXPECT_EQ(layout.y_ticks.front().label, "1e-04");

  spec.series[0].points = {{0, 0}, {1, -1}};
  EXPECT_FALSE(spec.has_data());
}

TEST(Chart, EventsAreDashedLinesWithTheirStory) {
  ChartSpec spec = line_chart();
  spec.markers.push_back({5, "#b00020", "recovery", "recovery at 5 s: lost ranks [2] <&>"});
  spec.markers.push_back({8, "#b00020", "recovery", "another"});
  const ChartLayout layout = lay_out(spec);
  ASSERT_EQ(layout.markers.size(), 2u);
  EXPECT_DOUBLE_EQ(layout.markers[0].points[0].x, (layout.left + layout.right) / 2);
  EXPECT_EQ(layout.legend.size(), 2u);  // "train" and one "recovery"
  const std::string svg = render_svg(layout);
  EXPECT_NE(svg.find("<line class=\"event\""), std::string::npos);
  EXPECT_NE(svg.find("<title>recovery at 5 s: lost ranks [2] &lt;&amp;&gt;</title>"), std::string::npos);
}

TEST(Chart, LegendWrapsAndNotesShrinkThePlot) {
  ChartSpec spec = line_chart();
  const double plain_bottom = lay_out(spec).bottom;
  for (int i = 0; i < 8; ++i) spec.series.push_back({"a rather long series name " + std::to_string(i), "#000000", Stroke::kDashed, {{1, 1}}});
  spec.notes.push_back("other-run: no data");
  const ChartLayout layout = lay_out(spec);
  EXPECT_LT(layout.bottom, plain_bottom - 3 * 16);
  for (const auto& entry : layout.legend) EXPECT_LE(entry.at.x, layout.width);
  EXPECT_NE(render_svg(layout).find("other-run: no data"), std::string::npos);
}

}  // namespace
}  // namespace gradshare::report
