// png_writer.h: a Bitmap as a PNG file's bytes: 8-bit RGB, no interlacing, every row with
// filter type 2 ("Up": the difference to the row above, mostly zeros in a chart), the image
// data deflated by zlib at level 6; chunk CRCs from zlib's crc32.
#pragma once

#include <cstdint>
#include <vector>

#include "report/raster.h"

namespace gradshare::report {

std::vector<std::uint8_t> encode_png(const Bitmap& bitmap);

}  // namespace gradshare::report
