// raster.cpp: Bitmap (see raster.h).
#include "report/raster.h"

#include <algorithm>
#include <cmath>

#include "report/bitmap_font.h"

namespace gradshare::report {

Rgb parse_color(const std::string& hex) {
  if (hex.size() != 7 || hex[0] != '#') return {};
  const auto byte = [&](std::size_t at) {
    return static_cast<std::uint8_t>(std::stoul(hex.substr(at, 2), nullptr, 16));
  };
  if (hex.find_first_not_of("0123456789abcdefABCDEF", 1) != std::string::npos) return {};
  return {byte(1), byte(3), byte(5)};
}

Bitmap::Bitmap(int width, int height, Rgb background)
    : width_(width), height_(height), pixels_(static_cast<std::size_t>(width) * height * 3) {
  for (std::size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

Rgb Bitmap::at(int x, int y) const {
  const std::size_t i = (static_cast<std::size_t>(y) * width_ + x) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Bitmap::set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const std::size_t i = (static_cast<std::size_t>(y) * width_ + x) * 3;
  pixels_[i] = color.r;
  pixels_[i + 1] = color.g;
  pixels_[i + 2] = color.b;
}

void Bitmap::stamp(double cx, double cy, double thickness, Rgb color) {
  const double half = thickness / 2;
  const int x0 = static_cast<int>(std::floor(cx - half + 0.5));
  const int y0 = static_cast<int>(std::floor(cy - half + 0.5));
  const int size = std::max(1, static_cast<int>(std::lround(thickness)));
  for (int y = y0; y < y0 + size; ++y)
    for (int x = x0; x < x0 + size; ++x) set(x, y, color);
}

void Bitmap::polyline(const std::vector<Xy>& points, Rgb color, double thickness, double dash_on,
                      double dash_off) {
  if (points.size() == 1) stamp(points[0].x, points[0].y, thickness + 2, color);
  double travelled = 0;  // along the whole line: dashes continue across its corners
  for (std::size_t i = 1; i < points.size(); ++i) {
    const Xy a = points[i - 1], b = points[i];
    const double length = std::hypot(b.x - a.x, b.y - a.y);
    const int samples = std::max(1, static_cast<int>(std::ceil(length * 2)));
    for (int s = 0; s <= samples; ++s) {
      const double f = static_cast<double>(s) / samples;
      const double along = travelled + f * length;
      if (dash_off > 0 && std::fmod(along, dash_on + dash_off) >= dash_on) continue;
      stamp(a.x + f * (b.x - a.x), a.y + f * (b.y - a.y), thickness, color);
    }
    travelled += length;
  }
}

void Bitmap::glyphs(const std::string& text, Rgb color, int scale,
                    const std::function<std::pair<int, int>(int along, int across)>& place) {
  for (std::size_t i = 0; i < text.size(); ++i)
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int column = 0; column < kGlyphWidth; ++column)
        if (glyph_pixel(text[i], column, row))
          for (int dy = 0; dy < scale; ++dy)
            for (int dx = 0; dx < scale; ++dx) {
              const auto [px, py] =
                  place((static_cast<int>(i) * kGlyphAdvance + column) * scale + dx, row * scale + dy);
              set(px, py, color);
            }
}

void Bitmap::text(double x, double y, const std::string& text, Rgb color, int scale) {
  const int left = static_cast<int>(std::lround(x)), top = static_cast<int>(std::lround(y));
  glyphs(text, color, scale, [&](int along, int across) { return std::pair{left + along, top + across}; });
}

void Bitmap::text_up(double x, double y, const std::string& text, Rgb color, int scale) {
  const int left = static_cast<int>(std::lround(x)), bottom = static_cast<int>(std::lround(y));
  glyphs(text, color, scale,
         [&](int along, int across) { return std::pair{left + across, bottom - along}; });
}

double Bitmap::text_width(const std::string& text, int scale) {
  return static_cast<double>(text.size() * kGlyphAdvance * scale);
}

}  // namespace gradshare::report
