// row_file.h: the features of a training file read by rows (samples) with pread, without
// loading the file: what partitioned reading (data.read: partitions, sample_reader.h) needs.
//   open_idx_rows  - an uncompressed IDX images file: the payload follows the header
//   open_hdf5_rows - an HDF5 features dataset stored contiguously and uncompressed (its file
//                    offset from H5Dget_offset); chunked or compressed datasets cannot be read
//                    by offset
// Both return nullopt, with the reason in *why, when the file cannot be read by rows (gzip IDX,
// chunked HDF5); format faults are core::UserError naming the file as the whole-file readers
// do. Reads need no library call, so one RowFile may serve a prefetch thread while HDF5 writes
// checkpoints on another (the HDF5 library is not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradshare::data {

struct ElementFormat {
  enum class Kind : std::uint8_t { kUnsigned, kSigned, kFloat } kind = Kind::kUnsigned;
  std::uint8_t bytes = 1;  // 1, 2, 4 or 8
  bool big_endian = false;
};

class RowFile {
 public:
  RowFile(std::string path, std::uint64_t offset, std::size_t rows,
          std::vector<std::int64_t> sample_shape, ElementFormat format);
  RowFile(RowFile&& other) noexcept;
  RowFile& operator=(RowFile&&) = delete;
  ~RowFile();

  const std::string& path() const { return path_; }
  std::size_t rows() const { return rows_; }
  std::size_t row_values() const { return row_values_; }  // floats per sample
  const std::vector<std::int64_t>& sample_shape() const { return sample_shape_; }
  // Reads rows [first, first + count) as float into out (count * row_values() values).
  // A short read (the file changed underneath) or an I/O error is a RuntimeError naming it.
  void read(std::size_t first, std::size_t count, float* out) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t offset_;
  std::size_t rows_;
  std::vector<std::int64_t> sample_shape_;
  std::size_t row_values_;
  ElementFormat format_;
};

std::optional<RowFile> open_idx_rows(const std::string& path, std::string* why);
std::optional<RowFile> open_hdf5_rows(const std::string& path, const std::string& dataset,
                                      std::string* why);

// Converts `count` elements of `format` at `bytes` to float.
void convert_elements(const std::uint8_t* bytes, std::size_t count, ElementFormat format,
                      float* out);

}  // namespace gradshare::data
