// bitmap_font.h: a 5x7 pixel font of printable ASCII for the labels of the PNG charts.
// Glyphs advance 6 pixels (one blank column); the 7 rows sit above the baseline.
#pragma once

namespace gradshare::report {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
inline constexpr int kGlyphAdvance = 6;

// Whether pixel (column, row) of character c is set; characters outside ' '..'~' draw as '?'.
bool glyph_pixel(char c, int column, int row);

}  // namespace gradshare::report
