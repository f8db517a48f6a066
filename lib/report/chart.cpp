// chart.cpp: lay_out (see chart.h): ranges, "nice" ticks, canvas coordinates, legend flow.
#include "report/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace gradshare::report {

namespace {

constexpr double kTitleHeight = 28;
constexpr double kLeftMargin = 64;
constexpr double kRightMargin = 16;
constexpr double kAxisBelow = 40;  // x tick labels and the x axis label
constexpr double kLegendRow = 16;
constexpr double kNoteRow = 14;
constexpr double kBottomPad = 6;

bool usable(double y, bool log) { return std::isfinite(y) && (!log || y > 0); }

// 1, 2, 2.5 or 5 times a power of ten, near `rough`.
double nice_step(double rough) {
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  const double fraction = rough / power;
  const double nice = fraction < 1.5 ? 1 : fraction < 2.25 ? 2 : fraction < 3.5 ? 2.5 : fraction < 7.5 ? 5 : 10;
  return nice * power;
}

struct Range {
  double lo = 0, hi = 1;
};

struct Scale {
  Range range;
  std::vector<double> ticks;  // values
  double step = 1;            // linear: tick spacing
  bool log = false;
};

Scale linear_scale(double lo, double hi, int target_ticks, bool round_ends) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  Scale scale;
  scale.step = nice_step((hi - lo) / target_ticks);
  const double first = std::floor(lo / scale.step + 1e-9);
  const double last = std::ceil(hi / scale.step - 1e-9);
  if (round_ends) {
    lo = first * scale.step;
    hi = last * scale.step;
  }
  scale.range = {lo, hi};
  for (double k = std::ceil(lo / scale.step - 1e-9); k * scale.step <= hi + scale.step * 1e-9; k += 1)
    scale.ticks.push_back(k * scale.step == 0 ? 0.0 : k * scale.step);  // no "-0"
  return scale;
}

Scale log_scale(double lo, double hi) {
  Scale scale;
  scale.log = true;
  const double first = std::floor(std::log10(lo) + 1e-9);
  double last = std::ceil(std::log10(hi) - 1e-9);
  if (last <= first) last = first + 1;
  scale.range = {first, last};  // in decades
  for (double d = first; d <= last; d += 1) {
    scale.ticks.push_back(std::pow(10.0, d));
    if (last - first <= 2 && d < last) {
      scale.ticks.push_back(2 * std::pow(10.0, d));
      scale.ticks.push_back(5 * std::pow(10.0, d));
    }
  }
  std::sort(scale.ticks.begin(), scale.ticks.end());
  return scale;
}

double position(const Scale& scale, double value) {
  const double v = scale.log ? std::log10(value) : value;
  return (v - scale.range.lo) / (scale.range.hi - scale.range.lo);
}

std::string log_label(double value) {
  const double decade = std::log10(value);
  char text[32];
  if (decade >= -2.5 && decade <= 4.5) std::snprintf(text, sizeof text, "%g", value);
  else std::snprintf(text, sizeof text, "%.0e", value);
  return text;
}

}  // namespace

bool ChartSpec::has_data() const {
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (std::isfinite(p.x) && usable(p.y, log_y)) return true;
  return false;
}

std::string tick_label(double value, double step) {
  char text[32];
  const double magnitude = std::max(std::fabs(value), step);
  if (magnitude >= 1e6 || step < 1e-4) {
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
  }
  // Digits down to the step's last significant one: 10^k, 2x10^k, 5x10^k need -k decimals,
  // 2.5x10^k one more.
  const int power = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  const double mantissa = step / std::pow(10.0, power);
  const int decimals = std::max(0, -power + (std::fabs(mantissa - 2.5) < 1e-6 ? 1 : 0));
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

namespace {

// Legend: series, then one entry per marker label.
std::vector<LegendEntry> legend_entries(const ChartSpec& spec) {
  std::vector<LegendEntry> entries;
  for (const auto& s : spec.series) entries.push_back({{}, s.label, s.color, s.stroke});
  std::set<std::string> marker_labels;
  for (const auto& m : spec.markers)
    if (marker_labels.insert(m.label).second)
      entries.push_back({{}, m.label, m.color, Stroke::kDashed});
  return entries;
}

// Places the entries in rows flowing left to right (each entry's y: its row number, from 1);
// the number of rows.
int place_legend(std::vector<LegendEntry>& entries, int width) {
  double x = kLeftMargin;
  int rows = entries.empty() ? 0 : 1;
  for (auto& entry : entries) {
    const double w =
        kLegendSample + kLegendGap + kCharWidth * static_cast<double>(entry.label.size()) + 14;
    if (x + w > width - kRightMargin && x > kLeftMargin) {
      x = kLeftMargin;
      ++rows;
    }
    entry.at = {x, static_cast<double>(rows)};
    x += w;
  }
  return rows;
}

struct Ranges {
  double x_lo, x_hi, y_lo, y_hi;
};

// The ranges over what is drawn (a default where nothing is).
Ranges drawn_ranges(const ChartSpec& spec) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const auto& s : spec.series)
    for (const auto& p : s.points) {
      if (!std::isfinite(p.x) || !usable(p.y, spec.log_y)) continue;
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y);
      y_hi = std::max(y_hi, p.y);
    }
  for (const auto& m : spec.markers) {
    x_lo = std::min(x_lo, m.x);
    x_hi = std::max(x_hi, m.x);
  }
  if (!std::isfinite(x_lo)) {
    x_lo = 0;
    x_hi = 1;
  }
  if (!std::isfinite(y_lo)) {
    y_lo = spec.log_y ? 1 : 0;
    y_hi = spec.log_y ? 10 : 1;
  }
  if (spec.y_from_zero && !spec.log_y) {
    y_lo = std::min(y_lo, 0.0);
    y_hi = std::max(y_hi, 0.0);
  }
  return {x_lo, x_hi, y_lo, y_hi};
}

}  // namespace

ChartLayout lay_out(const ChartSpec& spec, int width, int height) {
  ChartLayout layout;
  layout.id = spec.id;
  layout.width = width;
  layout.height = height;
  layout.title = spec.title;
  layout.x_label = spec.x_label;
  layout.y_label = spec.y_label;

  std::vector<LegendEntry> entries = legend_entries(spec);
  const int rows = place_legend(entries, width);

  layout.left = kLeftMargin;
  layout.right = width - kRightMargin;
  layout.top = kTitleHeight;
  layout.bottom = height - kBottomPad - kAxisBelow - rows * kLegendRow - static_cast<double>(spec.notes.size()) * kNoteRow;
  for (auto& entry : entries) entry.at.y = layout.bottom + kAxisBelow + (entry.at.y - 1) * kLegendRow + 10;
  layout.legend = std::move(entries);
  for (std::size_t i = 0; i < spec.notes.size(); ++i)
    layout.notes.push_back({{kLeftMargin, layout.bottom + kAxisBelow + rows * kLegendRow +
                                              static_cast<double>(i) * kNoteRow + 10},
                            spec.notes[i]});

  const Ranges r = drawn_ranges(spec);
  const Scale xs = linear_scale(std::min(r.x_lo, 0.0), r.x_hi, 6, false);
  const Scale ys =
      spec.log_y ? log_scale(r.y_lo, r.y_hi) : linear_scale(r.y_lo, r.y_hi, 5, true);
  const auto px = [&](double v) { return layout.left + position(xs, v) * (layout.right - layout.left); };
  const auto py = [&](double v) { return layout.bottom - position(ys, v) * (layout.bottom - layout.top); };

  for (double t : xs.ticks) layout.x_ticks.push_back({px(t), tick_label(t, xs.step)});
  for (double t : ys.ticks)
    layout.y_ticks.push_back({py(t), ys.log ? log_label(t) : tick_label(t, ys.step)});
  for (const auto& s : spec.series) {
    Polyline line{s.color, s.stroke, {}, s.label};
    for (const auto& p : s.points)
      if (std::isfinite(p.x) && usable(p.y, spec.log_y)) line.points.push_back({px(p.x), py(p.y)});
    layout.lines.push_back(std::move(line));
  }
  for (const auto& m : spec.markers) {
    layout.markers.push_back({m.color, Stroke::kDashed, {{px(m.x), layout.top}, {px(m.x), layout.bottom}}, m.label});
    layout.marker_tooltips.push_back(m.tooltip);
  }
  return layout;
}

}  // namespace gradshare::report
