// png_writer.cpp: encode_png (see png_writer.h; chunk layout from the PNG specification).
#include "report/png_writer.h"

#include <zlib.h>

#include <string>

#include "core/errors.h"

namespace gradshare::report {

namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 24));
  out.push_back(static_cast<std::uint8_t>(value >> 16));
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

// length, type, data, CRC of type and data
void put_chunk(std::vector<std::uint8_t>& out, const char (&type)[5], const std::vector<std::uint8_t>& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t type_at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  const uLong crc = crc32(0L, out.data() + type_at, static_cast<uInt>(4 + data.size()));
  put_u32(out, static_cast<std::uint32_t>(crc));
}

// The rows, each as filter byte 2 and its bytes minus those above, through one deflate stream.
std::vector<std::uint8_t> deflate_rows(const Bitmap& bitmap) {
  z_stream stream{};
  if (deflateInit(&stream, 6) != Z_OK) throw core::RuntimeError("PNG: zlib deflateInit failed");
  const auto stride = static_cast<std::size_t>(bitmap.width()) * 3;
  const auto& pixels = bitmap.pixels();
  std::vector<std::uint8_t> packed, row(1 + stride), buffer(1 << 16);
  row[0] = 2;
  int status = Z_OK;
  for (int y = 0; y <= bitmap.height() && status == Z_OK; ++y) {
    const bool last = y == bitmap.height();
    if (!last) {
      const std::size_t at = static_cast<std::size_t>(y) * stride;
      for (std::size_t i = 0; i < stride; ++i)
        row[1 + i] = static_cast<std::uint8_t>(pixels[at + i] - (y > 0 ? pixels[at + i - stride] : 0));
    }
    stream.next_in = row.data();
    stream.avail_in = last ? 0 : static_cast<uInt>(row.size());
    do {  // until deflate has taken the row (or, at the end, written everything)
      stream.next_out = buffer.data();
      stream.avail_out = static_cast<uInt>(buffer.size());
      status = deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      packed.insert(packed.end(), buffer.begin(), buffer.end() - stream.avail_out);
    } while (status == Z_OK && stream.avail_out == 0);
  }
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw core::RuntimeError("PNG: zlib deflate failed with status " + std::to_string(status));
  return packed;
}

}  // namespace

std::vector<std::uint8_t> encode_png(const Bitmap& bitmap) {
  const auto width = static_cast<std::uint32_t>(bitmap.width());
  const auto height = static_cast<std::uint32_t>(bitmap.height());
  std::vector<std::uint8_t> header;
  put_u32(header, width);
  put_u32(header, height);
  header.insert(header.end(), {8, 2, 0, 0, 0});  // bit depth 8, RGB, deflate, filter set 0, no interlace

  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  put_chunk(png, "IHDR", header);
  put_chunk(png, "IDAT", deflate_rows(bitmap));
  put_chunk(png, "IEND", {});
  return png;
}

}  // namespace gradshare::report
