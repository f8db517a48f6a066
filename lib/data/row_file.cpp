// row_file.cpp: RowFile, and the headers of IDX and HDF5 files read by rows.
#include "data/row_file.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/errors.h"

namespace gradshare::data {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw core::UserError(path + ": " + what);
}

std::uint64_t load(const std::uint8_t* p, std::size_t bytes, bool big_endian) {
  std::uint64_t value = 0;
  for (std::size_t b = 0; b < bytes; ++b) {
    const std::size_t shift = 8 * (big_endian ? bytes - 1 - b : b);
    value |= std::uint64_t{p[b]} << shift;
  }
  return value;
}

float to_float(std::uint64_t raw, ElementFormat format) {
  switch (format.kind) {
    case ElementFormat::Kind::kUnsigned:
      return static_cast<float>(raw);
    case ElementFormat::Kind::kSigned: {
      const unsigned bits = 8u * format.bytes;
      const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
      const auto value = bits == 64 ? static_cast<std::int64_t>(raw)
                                    : static_cast<std::int64_t>((raw ^ sign) - sign);
      return static_cast<float>(value);
    }
    case ElementFormat::Kind::kFloat:
      return format.bytes == 4 ? std::bit_cast<float>(static_cast<std::uint32_t>(raw))
                               : static_cast<float>(std::bit_cast<double>(raw));
  }
  return 0.0f;
}

std::uint64_t file_size(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) fail(path, "cannot open: is a directory");
  return static_cast<std::uint64_t>(info.st_size);
}

// Owns one HDF5 identifier.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

}  // namespace

void convert_elements(const std::uint8_t* bytes, std::size_t count, ElementFormat format,
                      float* out) {
  if (format.kind == ElementFormat::Kind::kUnsigned && format.bytes == 1) {
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(bytes[i]);
    return;
  }
  for (std::size_t i = 0; i < count; ++i)
    out[i] = to_float(load(bytes + i * format.bytes, format.bytes, format.big_endian), format);
}

RowFile::RowFile(std::string path, std::uint64_t offset, std::size_t rows,
                 std::vector<std::int64_t> sample_shape, ElementFormat format)
    : path_(std::move(path)), offset_(offset), rows_(rows), sample_shape_(std::move(sample_shape)),
      row_values_(1), format_(format) {
  for (const auto d : sample_shape_) row_values_ *= static_cast<std::size_t>(d);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(path_, std::string("cannot open: ") + std::strerror(errno));
}

RowFile::RowFile(RowFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), offset_(other.offset_),
      rows_(other.rows_), sample_shape_(std::move(other.sample_shape_)),
      row_values_(other.row_values_), format_(other.format_) {}

RowFile::~RowFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RowFile::read(std::size_t first, std::size_t count, float* out) const {
  GS_CHECK(first + count <= rows_, "rows past the end of " + path_);
  const std::size_t row_bytes = row_values_ * format_.bytes;
  std::vector<std::uint8_t> buffer(count * row_bytes);
  std::size_t have = 0;
  const auto at = static_cast<off_t>(offset_ + first * row_bytes);
  while (have < buffer.size()) {
    const ssize_t got = ::pread(fd_, buffer.data() + have, buffer.size() - have,
                                at + static_cast<off_t>(have));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw core::RuntimeError(path_ + ": read error: " + std::strerror(errno));
    if (got == 0)
      throw core::RuntimeError(path_ + ": the file ended inside sample " +
                               std::to_string(first + have / row_bytes) +
                               " (was it changed during the run?)");
    have += static_cast<std::size_t>(got);
  }
  convert_elements(buffer.data(), count * row_values_, format_, out);
}

std::optional<RowFile> open_idx_rows(const std::string& path, std::string* why) {
  const std::uint64_t size = file_size(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::uint8_t header[4 + 4 * 8] = {};
  const ssize_t got = ::pread(fd, header, sizeof header, 0);
  ::close(fd);
  if (got >= 2 && header[0] == 0x1f && header[1] == 0x8b) {
    *why = path + " is gzip-compressed (gunzip it to read it by partitions)";
    return std::nullopt;
  }
  if (got < 4 || header[0] != 0 || header[1] != 0)
    fail(path, "not an IDX file (an IDX magic number starts with two zero bytes)");
  ElementFormat format;
  format.big_endian = true;
  switch (header[2]) {
    case 0x08: format = {ElementFormat::Kind::kUnsigned, 1, true}; break;
    case 0x09: format = {ElementFormat::Kind::kSigned, 1, true}; break;
    case 0x0B: format = {ElementFormat::Kind::kSigned, 2, true}; break;
    case 0x0C: format = {ElementFormat::Kind::kSigned, 4, true}; break;
    case 0x0D: format = {ElementFormat::Kind::kFloat, 4, true}; break;
    case 0x0E: format = {ElementFormat::Kind::kFloat, 8, true}; break;
    default: fail(path, "unknown IDX element type code " + std::to_string(header[2]));
  }
  const int ndims = header[3];
  if (ndims < 2 || ndims > 8 || got < 4 + 4 * ndims)
    fail(path, "images must have 2 to 8 dimensions (count, sample shape...), the header says " +
                   std::to_string(ndims));
  std::vector<std::uint64_t> dims;
  std::uint64_t bytes = format.bytes;
  for (int d = 0; d < ndims; ++d) {
    dims.push_back(load(header + 4 + 4 * d, 4, true));
    bytes *= dims.back();
  }
  const std::uint64_t header_bytes = 4 + 4 * static_cast<std::uint64_t>(ndims);
  if (dims[0] == 0 || bytes == 0) fail(path, "no data");
  if (size != header_bytes + bytes)
    fail(path, "size mismatch: the header says " + std::to_string(bytes) +
                   " bytes of data but the file has " + std::to_string(size - header_bytes));
  std::vector<std::int64_t> shape;
  if (ndims == 3) shape.push_back(1);  // (N, H, W): one channel
  for (int d = 1; d < ndims; ++d) shape.push_back(static_cast<std::int64_t>(dims[d]));
  return RowFile(path, header_bytes, static_cast<std::size_t>(dims[0]), std::move(shape), format);
}

std::optional<RowFile> open_hdf5_rows(const std::string& path, const std::string& dataset,
                                      std::string* why) {
  file_size(path);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const Id file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) fail(path, "cannot open as HDF5");
  const Id data{H5Dopen2(file.id, dataset.c_str(), H5P_DEFAULT), H5Dclose};
  if (data.id < 0) fail(path, "no dataset '" + dataset + "' (data.features_dataset)");
  const Id plist{H5Dget_create_plist(data.id), H5Pclose};
  const haddr_t offset = H5Dget_offset(data.id);
  if (plist.id < 0 || H5Pget_layout(plist.id) != H5D_CONTIGUOUS || H5Pget_nfilters(plist.id) > 0 ||
      offset == HADDR_UNDEF) {
    H5Eclear2(H5E_DEFAULT);
    *why = path + " (dataset '" + dataset + "') is chunked or compressed (write it contiguous "
           "and uncompressed to read it by partitions)";
    return std::nullopt;
  }
  const Id type{H5Dget_type(data.id), H5Tclose};
  const H5T_class_t type_class = H5Tget_class(type.id);
  const std::size_t size = H5Tget_size(type.id);
  if ((type_class != H5T_INTEGER && type_class != H5T_FLOAT) ||
      (size != 1 && size != 2 && size != 4 && size != 8) ||
      (type_class == H5T_FLOAT && size != 4 && size != 8))
    fail(path, "features dataset '" + dataset + "' must hold integers or floats");
  ElementFormat format;
  format.bytes = static_cast<std::uint8_t>(size);
  format.big_endian = H5Tget_order(type.id) == H5T_ORDER_BE;
  format.kind = type_class == H5T_FLOAT                    ? ElementFormat::Kind::kFloat
                : H5Tget_sign(type.id) == H5T_SGN_NONE ? ElementFormat::Kind::kUnsigned
                                                           : ElementFormat::Kind::kSigned;
  const Id space{H5Dget_space(data.id), H5Sclose};
  const int rank = H5Sget_simple_extent_ndims(space.id);
  if (rank < 2 || rank > 4)
    fail(path, "features dataset '" + dataset + "' has rank " + std::to_string(rank) +
                   "; expected (N, features), (N, height, width) or (N, channels, height, width)");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
  std::vector<std::int64_t> shape;
  if (rank == 3) shape.push_back(1);
  for (int d = 1; d < rank; ++d) shape.push_back(static_cast<std::int64_t>(dims[d]));
  if (dims[0] == 0) fail(path, "features dataset '" + dataset + "' is empty");
  return RowFile(path, offset, static_cast<std::size_t>(dims[0]), std::move(shape), format);
}

}  // namespace gradshare::data
