// png_chart.cpp: render_bitmap (see png_chart.h).
#include "report/png_chart.h"

#include <string>

namespace gradshare::report {

namespace {

// The font covers ASCII: τ becomes "tau", any other non-ASCII character '?'.
std::string ascii(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      out += text[i];
    } else if (text.compare(i, 2, "\xCF\x84") == 0) {
      out += "tau";
      ++i;
    } else if (byte >= 0xC0) {
      out += '?';
    }  // continuation bytes of a replaced character
  }
  return out;
}

constexpr Rgb kGrid{0xe3, 0xe3, 0xe3};
constexpr Rgb kFrame{0x88, 0x88, 0x88};
constexpr Rgb kText{0x33, 0x33, 0x33};
constexpr Rgb kNote{0x77, 0x77, 0x77};

class Painter {
 public:
  Painter(const ChartLayout& layout, int scale)
      : bitmap_(layout.width * scale, layout.height * scale, Rgb{0xff, 0xff, 0xff}), s_(scale) {}

  Bitmap& bitmap() { return bitmap_; }

  // Text whose baseline is at canvas y: anchored at its start, middle or end.
  enum class Anchor { kStart, kMiddle, kEnd };
  void label(double x, double y, const std::string& raw, Rgb color, Anchor anchor = Anchor::kStart,
             bool bold = false) {
    const std::string text = ascii(raw);
    const double width = Bitmap::text_width(text, s_);
    double left = x * s_;
    if (anchor == Anchor::kMiddle) left -= width / 2;
    if (anchor == Anchor::kEnd) left -= width;
    const double top = (y - 7) * s_;
    bitmap_.text(left, top, text, color, s_);
    if (bold) bitmap_.text(left + 1, top, text, color, s_);
  }
  // Reads upwards, centred on canvas (x, y); x is the baseline.
  void label_up(double x, double y, const std::string& raw, Rgb color) {
    const std::string text = ascii(raw);
    bitmap_.text_up((x - 7) * s_, y * s_ + Bitmap::text_width(text, s_) / 2, text, color, s_);
  }
  void line(const std::vector<Xy>& canvas_points, Rgb color, double width, Stroke stroke) {
    std::vector<Xy> points;
    for (const auto& p : canvas_points) points.push_back({p.x * s_, p.y * s_});
    const double on = stroke == Stroke::kDashed ? 6 : stroke == Stroke::kDotted ? 2 : 0;
    const double off = stroke == Stroke::kDashed ? 4 : stroke == Stroke::kDotted ? 3 : 0;
    bitmap_.polyline(points, color, width * s_, on * s_, off * s_);
  }

 private:
  Bitmap bitmap_;
  int s_;
};

}  // namespace

Bitmap render_bitmap(const ChartLayout& l, int scale) {
  Painter p(l, scale);
  using Anchor = Painter::Anchor;
  p.label(l.width / 2.0, 18, l.title, kText, Anchor::kMiddle, true);
  for (const auto& t : l.y_ticks) p.line({{l.left, t.at}, {l.right, t.at}}, kGrid, 0.5, Stroke::kSolid);
  for (const auto& t : l.x_ticks) p.line({{t.at, l.top}, {t.at, l.bottom}}, kGrid, 0.5, Stroke::kSolid);
  for (const auto& t : l.y_ticks) p.label(l.left - 5, t.at + 4, t.label, kText, Anchor::kEnd);
  for (const auto& t : l.x_ticks) p.label(t.at, l.bottom + 15, t.label, kText, Anchor::kMiddle);
  p.label((l.left + l.right) / 2, l.bottom + 31, l.x_label, kText, Anchor::kMiddle);
  p.label_up(14, (l.top + l.bottom) / 2, l.y_label, kText);
  p.line({{l.left, l.top}, {l.right, l.top}, {l.right, l.bottom}, {l.left, l.bottom}, {l.left, l.top}}, kFrame,
         0.5, Stroke::kSolid);
  for (const auto& m : l.markers) p.line(m.points, parse_color(m.color), 0.6, m.stroke);
  for (const auto& line : l.lines) p.line(line.points, parse_color(line.color), 1.0, line.stroke);
  for (const auto& e : l.legend) {
    p.line({{e.at.x, e.at.y - 4}, {e.at.x + kLegendSample, e.at.y - 4}}, parse_color(e.color), 1.0, e.stroke);
    p.label(e.at.x + kLegendSample + kLegendGap, e.at.y, e.label, kText);
  }
  for (const auto& [at, note] : l.notes) p.label(at.x, at.y, note, kNote);
  return std::move(p.bitmap());
}

}  // namespace gradshare::report
