// idx_reader.cpp: IDX parsing through zlib's gz* functions, which read gzip and plain files alike.
//
// Layout of an IDX file: magic (0, 0, type code, number of dimensions), one big-endian uint32
// per dimension, then the elements in row-major order, big-endian. The payload is read in a
// few large gzread calls straight into its buffer, so Fashion-MNIST's training images (47 MB)
// take one pass of inflate and no copies.
#include "data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>

#include "core/errors.h"
#include "data/labels.h"

namespace gradshare::data {
namespace {

constexpr int kMaxDims = 8;
constexpr std::size_t kChunkBytes = std::size_t{1} << 26;    // one gzread call
constexpr std::size_t kReserveBytes = std::size_t{1} << 28;  // upfront, before the data is seen

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw core::UserError(path + ": " + what);
}

bool valid_type(std::uint8_t code) {
  switch (static_cast<IdxType>(code)) {
    case IdxType::kUint8:
    case IdxType::kInt8:
    case IdxType::kInt16:
    case IdxType::kInt32:
    case IdxType::kFloat32:
    case IdxType::kFloat64:
      return true;
  }
  return false;
}

const char* type_name(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
      return "uint8";
    case IdxType::kInt8:
      return "int8";
    case IdxType::kInt16:
      return "int16";
    case IdxType::kInt32:
      return "int32";
    case IdxType::kFloat32:
      return "float32";
    case IdxType::kFloat64:
      return "float64";
  }
  return "unknown";
}

// "60000 images of 28x28", "60000 labels", "500 items of 3x32x32".
std::string describe(const std::vector<std::int64_t>& dims) {
  std::string text = std::to_string(dims[0]);
  if (dims.size() == 1) return text + " labels";
  text += dims.size() == 3 ? " images of " : " items of ";
  for (std::size_t d = 1; d < dims.size(); ++d) {
    if (d > 1) text += "x";
    text += std::to_string(dims[d]);
  }
  return text;
}

std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::uint64_t load_be64(const std::uint8_t* p) {
  return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}

// Reads up to `size` bytes; returns how many arrived (fewer at the end of the file, including
// the end of a truncated gzip stream). Corrupt compressed data and I/O errors throw.
std::size_t read_some(gzFile file, std::uint8_t* out, std::size_t size, const std::string& path,
                      std::size_t offset) {
  std::size_t have = 0;
  while (have < size) {
    const auto want = static_cast<unsigned>(std::min(size - have, kChunkBytes));
    const int got = gzread(file, out + have, want);
    if (got > 0) have += static_cast<std::size_t>(got);
    if (got == static_cast<int>(want)) continue;
    int code = Z_OK;
    const char* message = gzerror(file, &code);
    if (code == Z_ERRNO) fail(path, std::string("read error: ") + std::strerror(errno));
    if (code != Z_OK && code != Z_BUF_ERROR)
      fail(path,
           "corrupt gzip data after " + std::to_string(offset + have) + " bytes (" + message + ")");
    break;
  }
  return have;
}

GzFile open_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "cannot open: no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "cannot open: is a directory");
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) fail(path, std::string("cannot open: ") + (errno ? std::strerror(errno) : "zlib"));
  gzbuffer(file.get(), 1u << 18);
  return file;
}

}  // namespace

std::size_t idx_element_size(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 1;
}

std::size_t IdxArray::element_count() const {
  std::size_t count = 1;
  for (std::int64_t d : dims) count *= static_cast<std::size_t>(d);
  return count;
}

IdxArray read_idx(const std::string& path) {
  GzFile file = open_file(path);
  std::array<std::uint8_t, 4> magic{};
  if (read_some(file.get(), magic.data(), magic.size(), path, 0) < magic.size())
    fail(path, "truncated: too short for an IDX header");
  const std::uint32_t magic_value = load_be32(magic.data());
  char magic_hex[16];
  std::snprintf(magic_hex, sizeof magic_hex, "0x%08x", magic_value);
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, std::string("bad magic ") + magic_hex +
                   ": not an IDX file (an IDX magic number starts with two zero bytes)");
  if (!valid_type(magic[2]))
    fail(path, std::string("bad magic ") + magic_hex + ": unknown IDX element type code " +
                   std::to_string(magic[2]));
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kMaxDims)
    fail(path, std::string("bad magic ") + magic_hex + ": " + std::to_string(ndims) +
                   " dimensions (1.." + std::to_string(kMaxDims) + " supported)");

  IdxArray array;
  array.type = static_cast<IdxType>(magic[2]);
  std::array<std::uint8_t, 4 * kMaxDims> dim_bytes{};
  const std::size_t header_rest = 4 * static_cast<std::size_t>(ndims);
  if (read_some(file.get(), dim_bytes.data(), header_rest, path, 4) < header_rest)
    fail(path,
         "truncated: the file ends inside the header of " + std::to_string(ndims) + " dimensions");
  std::size_t expected = idx_element_size(array.type);
  for (int d = 0; d < ndims; ++d) {
    const std::uint32_t dim = load_be32(dim_bytes.data() + 4 * d);
    array.dims.push_back(dim);
    if (dim != 0 && expected > std::numeric_limits<std::size_t>::max() / dim)
      fail(path, "implausible header: dimensions " + describe(array.dims) + " overflow");
    expected *= dim;
  }

  // Grow the buffer with the data actually present, so a header claiming terabytes fails as
  // truncated instead of allocating them.
  array.bytes.reserve(std::min(expected, kReserveBytes));
  std::size_t have = 0;
  const std::size_t header_bytes = 4 + header_rest;
  while (have < expected) {
    const std::size_t want = std::min(expected - have, kChunkBytes);
    array.bytes.resize(have + want);
    const std::size_t got =
        read_some(file.get(), array.bytes.data() + have, want, path, header_bytes + have);
    have += got;
    if (got < want) break;
  }
  const std::string claim = "header says " + describe(array.dims) + " (" + type_name(array.type) +
                            ", " + std::to_string(expected) + " bytes)";
  if (have < expected)
    fail(path, "truncated: " + claim + " but the file has " + std::to_string(have) +
                   " bytes after the header");
  std::array<std::uint8_t, 1 << 16> rest{};
  std::size_t extra = 0;
  for (std::size_t got; (got = read_some(file.get(), rest.data(), rest.size(), path,
                                         header_bytes + have + extra)) > 0;) {
    extra += got;
  }
  if (extra > 0)
    fail(path, "size mismatch: " + claim + " but the file has " + std::to_string(have + extra) +
                   " bytes after the header");
  return array;
}

std::vector<float> idx_to_features(const IdxArray& array) {
  const std::size_t n = array.element_count();
  std::vector<float> out(n);
  const std::uint8_t* p = array.bytes.data();
  switch (array.type) {
    case IdxType::kUint8:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      break;
    case IdxType::kInt8:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(static_cast<std::int8_t>(p[i]));
      break;
    case IdxType::kInt16:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(static_cast<std::int16_t>((p[2 * i] << 8) | p[2 * i + 1]));
      break;
    case IdxType::kInt32:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(static_cast<std::int32_t>(load_be32(p + 4 * i)));
      break;
    case IdxType::kFloat32:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(load_be32(p + 4 * i));
      break;
    case IdxType::kFloat64:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(std::bit_cast<double>(load_be64(p + 8 * i)));
      break;
  }
  return out;
}

std::vector<std::int32_t> idx_to_labels(const IdxArray& array, const std::string& path) {
  const std::size_t n = array.element_count();
  std::vector<std::int32_t> out(n);
  const std::uint8_t* p = array.bytes.data();
  switch (array.type) {
    case IdxType::kUint8:
      for (std::size_t i = 0; i < n; ++i) out[i] = p[i];
      break;
    case IdxType::kInt8:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int8_t>(p[i]);
      break;
    case IdxType::kInt16:
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::int16_t>((p[2 * i] << 8) | p[2 * i + 1]);
      break;
    case IdxType::kInt32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int32_t>(load_be32(p + 4 * i));
      break;
    case IdxType::kFloat32:
    case IdxType::kFloat64:
      fail(path,
           std::string("labels must have an integer element type, not ") + type_name(array.type));
  }
  return out;
}

Dataset read_idx_dataset(const std::string& images_path, const std::string& labels_path) {
  const IdxArray images = read_idx(images_path);
  if (images.dims.size() < 2)
    fail(images_path, "images must have at least 2 dimensions (count, sample shape...), found " +
                          describe(images.dims));
  if (images.element_count() == 0) fail(images_path, "no data: " + describe(images.dims));
  const IdxArray labels = read_idx(labels_path);
  if (labels.dims.size() > 2 || (labels.dims.size() == 2 && labels.dims[1] != 1))
    fail(labels_path, "labels must have shape (N) or (N, 1), found " + describe(labels.dims));
  if (labels.dims[0] != images.dims[0])
    fail(labels_path, "mismatched lengths: " + std::to_string(labels.dims[0]) + " labels but " +
                          images_path + " has " + std::to_string(images.dims[0]) + " samples");

  Dataset dataset;
  dataset.labels = idx_to_labels(labels, labels_path);
  check_label_range(dataset.labels, labels_path, kMaxClasses);
  dataset.features = idx_to_features(images);
  if (images.dims.size() == 3) dataset.sample_shape.push_back(1);  // (N, H, W): one channel
  dataset.sample_shape.insert(dataset.sample_shape.end(), images.dims.begin() + 1,
                              images.dims.end());
  return dataset;
}

}  // namespace gradshare::data
