// idx_reader.h: reader of IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
//   read_idx         - the raw array: element type, dimensions, big-endian payload
//   idx_to_features  - any IDX element type -> float
//   idx_to_labels    - integer IDX element types -> int32 class ids
//   read_idx_dataset - an images file and a labels file checked against each other
// Every fault of a file (missing, truncated, bad magic, unknown type, sizes that disagree) is a
// core::UserError that names the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace gradshare::data {

// IDX element type codes (third byte of the magic number).
enum class IdxType : std::uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

struct IdxArray {
  IdxType type = IdxType::kUint8;
  std::vector<std::int64_t> dims;   // dims[0] is the number of items
  std::vector<std::uint8_t> bytes;  // payload exactly as in the file (big-endian)

  std::size_t element_count() const;
};

std::size_t idx_element_size(IdxType type);

// Reads a whole IDX file; gzip is detected from the content, not the name.
IdxArray read_idx(const std::string& path);

// Converts the payload, whatever its element type, to float.
std::vector<float> idx_to_features(const IdxArray& array);
// Converts an integer payload to labels; errors (float type) name `path`.
std::vector<std::int32_t> idx_to_labels(const IdxArray& array, const std::string& path);

// Reads images (N, ...) and labels (N) or (N, 1) into a Dataset with num_classes = 0 (the
// loader fills it in). Sample shape: (N, H, W) -> {1, H, W}; otherwise dims[1:].
Dataset read_idx_dataset(const std::string& images_path, const std::string& labels_path);

}  // namespace gradshare::data
