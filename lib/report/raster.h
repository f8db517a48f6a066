// raster.h: an RGB bitmap and what the PNG charts draw on it: thick solid or dashed polylines
// and text in the 5x7 bitmap font (horizontal, or turned to read upwards).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "report/chart.h"  // Xy

namespace gradshare::report {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// "#rrggbb"; anything else is black.
Rgb parse_color(const std::string& hex);

class Bitmap {
 public:
  Bitmap(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  Rgb at(int x, int y) const;
  // Rows top to bottom, 3 bytes per pixel.
  const std::vector<std::uint8_t>& pixels() const { return pixels_; }

  void set(int x, int y, Rgb color);  // outside the bitmap: ignored
  // dash_on/dash_off in pixels along the line; dash_off 0 draws it solid.
  void polyline(const std::vector<Xy>& points, Rgb color, double thickness, double dash_on = 0,
                double dash_off = 0);
  // Glyph cells of `scale` pixels; (x, y) is the top left of the first glyph. Non-ASCII bytes
  // draw as '?'.
  void text(double x, double y, const std::string& text, Rgb color, int scale);
  // The same turned 90 degrees counter-clockwise: reads upwards from (x, y), the bottom left.
  void text_up(double x, double y, const std::string& text, Rgb color, int scale);
  static double text_width(const std::string& text, int scale);

 private:
  void stamp(double cx, double cy, double thickness, Rgb color);
  // Sets the pixels of `text`'s glyphs; `place` maps a pixel's offset along the text and across
  // it to bitmap coordinates (the text's direction).
  void glyphs(const std::string& text, Rgb color, int scale,
              const std::function<std::pair<int, int>(int along, int across)>& place);
  int width_, height_;
  std::vector<std::uint8_t> pixels_;
};

}  // namespace gradshare::report
