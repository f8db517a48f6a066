// svg_chart.cpp: render_svg (see svg_chart.h).
#include "report/svg_chart.h"

#include <cstdio>

namespace gradshare::report {

namespace {

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string dash(Stroke stroke) {
  switch (stroke) {
    case Stroke::kSolid: return "";
    case Stroke::kDashed: return " stroke-dasharray=\"6 4\"";
    case Stroke::kDotted: return " stroke-dasharray=\"2 3\"";
  }
  return "";
}

std::string text(double x, double y, const std::string& content, const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + extra + ">" + xml_escape(content) + "</text>\n";
}

}  // namespace

std::string xml_escape(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg(const ChartLayout& l) {
  const std::string w = std::to_string(l.width), h = std::to_string(l.height);
  std::string svg = "<svg class=\"chart\" data-chart=\"" + xml_escape(l.id) + "\" viewBox=\"0 0 " + w + " " + h +
                    "\" width=\"" + w + "\" height=\"" + h + "\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<title>" + xml_escape(l.title) + "</title>\n";
  svg += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
  svg += text(l.width / 2.0, 18, l.title, " text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\"");

  // Grid and ticks.
  svg += "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  for (const auto& t : l.y_ticks)
    svg += "<line x1=\"" + num(l.left) + "\" x2=\"" + num(l.right) + "\" y1=\"" + num(t.at) + "\" y2=\"" + num(t.at) + "\"/>\n";
  for (const auto& t : l.x_ticks)
    svg += "<line x1=\"" + num(t.at) + "\" x2=\"" + num(t.at) + "\" y1=\"" + num(l.top) + "\" y2=\"" + num(l.bottom) + "\"/>\n";
  svg += "</g>\n<g fill=\"#333333\">\n";
  for (const auto& t : l.y_ticks) svg += text(l.left - 5, t.at + 4, t.label, " text-anchor=\"end\"");
  for (const auto& t : l.x_ticks) svg += text(t.at, l.bottom + 15, t.label, " text-anchor=\"middle\"");
  svg += text((l.left + l.right) / 2, l.bottom + 31, l.x_label, " text-anchor=\"middle\"");
  const double mid = (l.top + l.bottom) / 2;
  svg += text(14, mid, l.y_label, " text-anchor=\"middle\" transform=\"rotate(-90 14 " + num(mid) + ")\"");
  svg += "</g>\n";

  // The frame, events, then the series over them.
  svg += "<rect x=\"" + num(l.left) + "\" y=\"" + num(l.top) + "\" width=\"" + num(l.right - l.left) +
         "\" height=\"" + num(l.bottom - l.top) + "\" fill=\"none\" stroke=\"#888888\"/>\n";
  for (std::size_t i = 0; i < l.markers.size(); ++i) {
    const auto& m = l.markers[i];
    svg += "<line class=\"event\" x1=\"" + num(m.points[0].x) + "\" x2=\"" + num(m.points[1].x) + "\" y1=\"" +
           num(m.points[0].y) + "\" y2=\"" + num(m.points[1].y) + "\" stroke=\"" + m.color +
           "\" stroke-width=\"1.2\"" + dash(m.stroke) + "><title>" + xml_escape(l.marker_tooltips[i]) +
           "</title></line>\n";
  }
  for (const auto& line : l.lines) {
    if (line.points.empty()) continue;
    std::string points;
    for (const auto& p : line.points) points += (points.empty() ? "" : " ") + num(p.x) + "," + num(p.y);
    svg += "<polyline class=\"series\" data-label=\"" + xml_escape(line.label) + "\" fill=\"none\" stroke=\"" +
           line.color + "\" stroke-width=\"1.8\" stroke-linejoin=\"round\"" + dash(line.stroke) +
           " points=\"" + points + "\"/>\n";
    if (line.points.size() == 1)  // a lone point is a dot
      svg += "<circle cx=\"" + num(line.points[0].x) + "\" cy=\"" + num(line.points[0].y) + "\" r=\"2.5\" fill=\"" +
             line.color + "\"/>\n";
  }

  for (const auto& e : l.legend) {
    svg += "<line x1=\"" + num(e.at.x) + "\" x2=\"" + num(e.at.x + kLegendSample) + "\" y1=\"" + num(e.at.y - 4) +
           "\" y2=\"" + num(e.at.y - 4) + "\" stroke=\"" + e.color + "\" stroke-width=\"2\"" + dash(e.stroke) + "/>\n";
    svg += text(e.at.x + kLegendSample + kLegendGap, e.at.y, e.label, " fill=\"#333333\"");
  }
  for (const auto& [at, note] : l.notes) svg += text(at.x, at.y, note, " fill=\"#777777\" font-style=\"italic\"");
  svg += "</svg>\n";
  return svg;
}

}  // namespace gradshare::report
