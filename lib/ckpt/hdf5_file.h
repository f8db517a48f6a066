// hdf5_file.h: a thin RAII layer over the HDF5 C API for the checkpoint writer and reader:
// typed attributes and checksummed float32/uint64 datasets; every failure becomes an exception.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradshare::ckpt {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid(Hid&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Hid& operator=(Hid&& other) noexcept;
  ~Hid() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

class Hdf5File {
 public:
  static Hdf5File create(const std::string& path);     // truncates
  static Hdf5File open_read(const std::string& path);  // throws std::runtime_error on failure
  const std::string& path() const { return path_; }
  void flush();
  void close() { file_.reset(); }

  // Attributes on the object at `object_path` ("/" or a group/dataset path).
  void write_attribute(const std::string& object_path, const std::string& name,
                       const std::string& value);
  void write_attribute(const std::string& object_path, const std::string& name, std::int64_t value);
  void write_attribute(const std::string& object_path, const std::string& name,
                       const std::vector<std::int64_t>& values);
  void write_attribute(const std::string& object_path, const std::string& name,
                       const std::vector<std::uint64_t>& values);
  bool has_attribute(const std::string& object_path, const std::string& name) const;
  std::string read_string_attribute(const std::string& object_path, const std::string& name) const;
  std::int64_t read_int_attribute(const std::string& object_path, const std::string& name) const;
  std::vector<std::int64_t> read_int_list_attribute(const std::string& object_path,
                                                    const std::string& name) const;
  std::vector<std::uint64_t> read_uint_list_attribute(const std::string& object_path,
                                                      const std::string& name) const;

  // Chunked, Fletcher32-checksummed datasets; parent groups are created as needed.
  void write_floats(const std::string& path, const float* data, const std::vector<hsize_t>& shape);
  void write_uints(const std::string& path, const std::vector<std::uint64_t>& values);
  // An empty group (and its missing parents), to carry attributes.
  void create_group(const std::string& path);
  bool has_object(const std::string& path) const;
  // Reads a dataset (verifying its checksum); returns its shape in `shape`.
  std::vector<float> read_floats(const std::string& path,
                                 std::vector<hsize_t>* shape = nullptr) const;
  std::vector<std::uint64_t> read_uints(const std::string& path) const;
  // Names of the members of a group, in HDF5's order.
  std::vector<std::string> list_group(const std::string& path) const;
  // A link at `path` to the root of file `target` (relative: to this file's directory).
  void link_external(const std::string& path, const std::string& target);
  // The file an external link at `path` points to; nullopt for anything else.
  std::optional<std::string> external_target(const std::string& path) const;

 private:
  Hdf5File(std::string path, Hid file) : path_(std::move(path)), file_(std::move(file)) {}
  Hid open_object(const std::string& path) const;
  // A list attribute of `count` values stored as `file_type`, read from `data` as `memory_type`.
  void write_list_attribute(const std::string& object_path, const std::string& name,
                            hid_t file_type, hid_t memory_type, const void* data,
                            std::size_t count);
  std::string path_;
  Hid file_;
};

}  // namespace gradshare::ckpt
