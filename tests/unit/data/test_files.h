// test_files.h: helpers of the data tests: a scratch folder, IDX and HDF5 file writers, and
// catching a UserError's message.
#pragma once

#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "core/errors.h"

namespace gradshare::data::testing {

// A fresh folder under the system temp dir, removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("gs_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// An IDX file image: magic (0, 0, type, ndims), big-endian dims, payload.
inline std::vector<std::uint8_t> idx_bytes(std::uint8_t type,
                                           const std::vector<std::uint32_t>& dims,
                                           const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> bytes = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((d >> shift) & 0xff);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

// Writes `bytes` to `path`, gzip-compressed when `gzip`.
inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes,
                        bool gzip) {
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (!bytes.empty()) gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Writes one dataset of `memory_type` values with shape `dims` into an open HDF5 file.
template <typename T>
void write_h5(hid_t file, const std::string& name, hid_t memory_type,
              const std::vector<hsize_t>& dims, const std::vector<T>& values) {
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t dataset =
      H5Dcreate2(file, name.c_str(), memory_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(dataset);
  H5Sclose(space);
}

// Adds the integer attribute num_classes to dataset `name`.
inline void write_num_classes(hid_t file, const std::string& name, std::int64_t value) {
  hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attribute =
      H5Acreate2(dataset, "num_classes", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, H5T_NATIVE_INT64, &value);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Dclose(dataset);
}

// A data section for custom IDX files: training and test images and labels.
inline config::DataConfig idx_data_config(const std::string& train_images,
                                          const std::string& train_labels,
                                          const std::string& test_images,
                                          const std::string& test_labels) {
  config::DataConfig config;
  config.dataset = "custom";
  config.format = "idx";
  config.train_images = train_images;
  config.train_labels = train_labels;
  config.test_images = test_images;
  config.test_labels = test_labels;
  return config;
}

// The message of the UserError `call` throws, or "(no error)".
template <typename F>
std::string user_error_of(F&& call) {
  try {
    call();
  } catch (const core::UserError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace gradshare::data::testing
