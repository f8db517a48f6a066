// Tests of the PNG writer and the PNG charts: the file decodes (signature, IHDR, chunk CRCs,
// zlib-inflated rows equal the pixels) and a rendered chart is not blank.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "report/chart.h"
#include "report/png_chart.h"
#include "report/png_writer.h"
#include "report/raster.h"

namespace gradshare::report {
namespace {

struct Chunk {
  std::string type;
  std::vector<std::uint8_t> data;
  bool crc_ok = false;
};

std::uint32_t u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

std::vector<Chunk> chunks_of(const std::vector<std::uint8_t>& png) {
  std::vector<Chunk> chunks;
  std::size_t at = 8;
  while (at + 12 <= png.size()) {
    const std::uint32_t length = u32(png, at);
    Chunk chunk;
    chunk.type.assign(png.begin() + static_cast<long>(at) + 4, png.begin() + static_cast<long>(at) + 8);
    chunk.data.assign(png.begin() + static_cast<long>(at) + 8, png.begin() + static_cast<long>(at + 8 + length));
    const uLong crc = crc32(0L, png.data() + at + 4, 4 + length);
    chunk.crc_ok = crc == u32(png, at + 8 + length);
    chunks.push_back(std::move(chunk));
    at += 12 + length;
  }
  EXPECT_EQ(at, png.size());
  return chunks;
}

TEST(PngWriter, OutputDecodesToThePixels) {
  Bitmap bitmap(3, 2, Rgb{255, 255, 255});
  bitmap.set(0, 0, {255, 0, 0});
  bitmap.set(1, 0, {0, 255, 0});
  bitmap.set(2, 1, {0, 0, 255});
  const auto png = encode_png(bitmap);
  const std::vector<std::uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(std::vector<std::uint8_t>(png.begin(), png.begin() + 8), signature);

  const auto chunks = chunks_of(png);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].type, "IHDR");
  EXPECT_EQ(chunks[1].type, "IDAT");
  EXPECT_EQ(chunks[2].type, "IEND");
  for (const auto& chunk : chunks) EXPECT_TRUE(chunk.crc_ok) << chunk.type;
  ASSERT_EQ(chunks[0].data.size(), 13u);
  EXPECT_EQ(u32(chunks[0].data, 0), 3u);  // width
  EXPECT_EQ(u32(chunks[0].data, 4), 2u);  // height
  EXPECT_EQ(chunks[0].data[8], 8);        // bit depth
  EXPECT_EQ(chunks[0].data[9], 2);        // truecolour
  EXPECT_EQ(chunks[0].data[12], 0);       // not interlaced
  EXPECT_TRUE(chunks[2].data.empty());

  std::vector<std::uint8_t> rows(2 * (1 + 3 * 3));
  uLongf size = rows.size();
  ASSERT_EQ(uncompress(rows.data(), &size, chunks[1].data.data(), chunks[1].data.size()), Z_OK);
  ASSERT_EQ(size, rows.size());
  // Filter "Up": the second row holds differences to the first.
  const std::vector<std::uint8_t> filtered = {2, 255, 0, 0, 0, 255, 0, 255, 255, 255,
                                              2, 0,   255, 255, 255, 0, 255, 1, 1, 0};
  EXPECT_EQ(rows, filtered);
  std::vector<std::uint8_t> pixels;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i % 10 == 0) continue;  // the filter byte
    pixels.push_back(static_cast<std::uint8_t>(rows[i] + (i >= 10 ? rows[i - 10] : 0)));
  }
  const std::vector<std::uint8_t> expected = {255, 0, 0, 0, 255, 0, 255, 255, 255,
                                              255, 255, 255, 255, 255, 255, 0, 0, 255};
  EXPECT_EQ(pixels, expected);
}

TEST(PngChart, DrawsTheChart) {
  ChartSpec spec;
  spec.id = "loss-time";
  spec.title = "Loss against time";
  spec.x_label = "time (s)";
  spec.y_label = "τ";
  spec.series.push_back({"train", "#1f77b4", Stroke::kSolid, {{0, 2}, {5, 1}, {10, 0.5}}});
  spec.series.push_back({"test", "#d62728", Stroke::kDashed, {{2, 1.5}, {10, 0.7}}});
  spec.markers.push_back({4, "#a0a0a0", "checkpoint", "checkpoint"});
  const ChartLayout layout = lay_out(spec);
  const Bitmap bitmap = render_bitmap(layout, 2);
  ASSERT_EQ(bitmap.width(), 2 * kChartWidth);
  ASSERT_EQ(bitmap.height(), 2 * kChartHeight);
  std::set<std::uint32_t> colours;
  int blue = 0, red = 0, dark = 0;
  for (int y = 0; y < bitmap.height(); ++y)
    for (int x = 0; x < bitmap.width(); ++x) {
      const Rgb c = bitmap.at(x, y);
      colours.insert((std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | c.b);
      blue += c == Rgb{0x1f, 0x77, 0xb4};
      red += c == Rgb{0xd6, 0x27, 0x28};
      dark += c == Rgb{0x33, 0x33, 0x33};
    }
  EXPECT_GE(colours.size(), 6u);  // background, grid, frame, text, two series, event
  EXPECT_GT(blue, 1000);          // the train line, 2 px wide across the plot
  EXPECT_GT(red, 300);            // dashed
  EXPECT_GT(dark, 500);           // labels
  // The line starts at the top left of the plot and is drawn where the layout says.
  const Xy start = layout.lines[0].points[0];
  EXPECT_EQ(bitmap.at(static_cast<int>(start.x * 2), static_cast<int>(start.y * 2)), (Rgb{0x1f, 0x77, 0xb4}));
}

TEST(Raster, ParsesColours) {
  EXPECT_EQ(parse_color("#1f77b4"), (Rgb{0x1f, 0x77, 0xb4}));
  EXPECT_EQ(parse_color("red"), Rgb{});
  EXPECT_EQ(parse_color("#12345z"), Rgb{});
}

}  // namespace
}  // namespace gradshare::report
