#include "ckpt/hdf5_file.h"

#include <algorithm>
#include <stdexcept>

namespace gradshare::ckpt {

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(file + ": " + what);
}

void silence_hdf5_errors() {
  // HDF5 prints its error stack to stderr by default; we report our own one-line errors.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Hid check(hid_t id, Hid::Closer closer, const std::string& file, const std::string& what) {
  if (id < 0) fail(file, what);
  return Hid(id, closer);
}

void check_status(herr_t status, const std::string& file, const std::string& what) {
  if (status < 0) fail(file, what);
}

Hid string_type(std::size_t length) {
  Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(length, 1));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  return type;
}

Hid list_space(std::size_t count) {
  if (count == 0) return Hid(H5Screate(H5S_NULL), H5Sclose);
  const hsize_t dims[1] = {count};
  return Hid(H5Screate_simple(1, dims, nullptr), H5Sclose);
}

}  // namespace

Hid& Hid::operator=(Hid&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Hid::reset() {
  if (id_ >= 0 && closer_) closer_(id_);
  id_ = -1;
}

Hdf5File Hdf5File::create(const std::string& path) {
  silence_hdf5_errors();
  return Hdf5File(path, check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                              H5Fclose, path, "cannot create HDF5 file"));
}

Hdf5File Hdf5File::open_read(const std::string& path) {
  silence_hdf5_errors();
#if H5_VERSION_GE(1, 12, 0)
  const htri_t is_hdf5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
#endif
  if (is_hdf5 <= 0) fail(path, "not an HDF5 file (or unreadable)");
  return Hdf5File(path, check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, path,
                              "cannot open HDF5 file"));
}

void Hdf5File::flush() {
  check_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), path_, "flush failed");
}

Hid Hdf5File::open_object(const std::string& path) const {
  return check(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), H5Oclose, path_,
               "missing object '" + path + "'");
}

bool Hdf5File::has_object(const std::string& path) const {
  // Check every prefix: H5Lexists fails (not false) when a parent group is missing.
  std::size_t position = 0;
  while ((position = path.find('/', position + 1)) != std::string::npos) {
    if (H5Lexists(file_.get(), path.substr(0, position).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT) > 0;
}

void Hdf5File::write_attribute(const std::string& object_path, const std::string& name,
                               const std::string& value) {
  Hid object = open_object(object_path);
  Hid type = string_type(value.size());
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attribute = check(
      H5Acreate2(object.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, path_, "cannot create attribute '" + name + "'");
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  check_status(H5Awrite(attribute.get(), type.get(), padded.data()), path_,
               "cannot write attribute '" + name + "'");
}

void Hdf5File::write_attribute(const std::string& object_path, const std::string& name,
                               std::int64_t value) {
  Hid object = open_object(object_path);
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attribute = check(
      H5Acreate2(object.get(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, path_, "cannot create attribute '" + name + "'");
  check_status(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), path_,
               "cannot write attribute '" + name + "'");
}

void Hdf5File::write_list_attribute(const std::string& object_path, const std::string& name,
                                    hid_t file_type, hid_t memory_type, const void* data,
                                    std::size_t count) {
  Hid object = open_object(object_path);
  Hid space = list_space(count);
  Hid attribute = check(
      H5Acreate2(object.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, path_, "cannot create attribute '" + name + "'");
  if (count > 0)
    check_status(H5Awrite(attribute.get(), memory_type, data), path_,
                 "cannot write attribute '" + name + "'");
}

void Hdf5File::write_attribute(const std::string& object_path, const std::string& name,
                               const std::vector<std::int64_t>& values) {
  write_list_attribute(object_path, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values.data(),
                       values.size());
}

void Hdf5File::write_attribute(const std::string& object_path, const std::string& name,
                               const std::vector<std::uint64_t>& values) {
  write_list_attribute(object_path, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, values.data(),
                       values.size());
}

bool Hdf5File::has_attribute(const std::string& object_path, const std::string& name) const {
  return H5Aexists_by_name(file_.get(), object_path.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::string Hdf5File::read_string_attribute(const std::string& object_path,
                                            const std::string& name) const {
  Hid attribute = check(
      H5Aopen_by_name(file_.get(), object_path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, path_, "missing attribute '" + name + "'");
  Hid type = check(H5Aget_type(attribute.get()), H5Tclose, path_, "bad attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    fail(path_, "attribute '" + name + "' is not a fixed-length string");
  const std::size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  check_status(H5Aread(attribute.get(), type.get(), value.data()), path_,
               "cannot read attribute '" + name + "'");
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

std::int64_t Hdf5File::read_int_attribute(const std::string& object_path,
                                          const std::string& name) const {
  Hid attribute = check(
      H5Aopen_by_name(file_.get(), object_path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, path_, "missing attribute '" + name + "'");
  Hid space(H5Aget_space(attribute.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    fail(path_, "attribute '" + name + "' is not a scalar");
  std::int64_t value = 0;
  check_status(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), path_,
               "cannot read attribute '" + name + "' as an integer");
  return value;
}

namespace {
template <typename T>
std::vector<T> read_list_attribute(hid_t file, const std::string& file_path,
                                   const std::string& object_path, const std::string& name,
                                   hid_t memory_type) {
  Hid attribute =
      check(H5Aopen_by_name(file, object_path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, file_path, "missing attribute '" + name + "'");
  Hid space(H5Aget_space(attribute.get()), H5Sclose);
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return {};
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) fail(file_path, "bad attribute '" + name + "'");
  std::vector<T> values(static_cast<std::size_t>(count));
  check_status(H5Aread(attribute.get(), memory_type, values.data()), file_path,
               "cannot read attribute '" + name + "'");
  return values;
}
}  // namespace

std::vector<std::int64_t> Hdf5File::read_int_list_attribute(const std::string& object_path,
                                                            const std::string& name) const {
  return read_list_attribute<std::int64_t>(file_.get(), path_, object_path, name, H5T_NATIVE_INT64);
}

std::vector<std::uint64_t> Hdf5File::read_uint_list_attribute(const std::string& object_path,
                                                              const std::string& name) const {
  return read_list_attribute<std::uint64_t>(file_.get(), path_, object_path, name,
                                            H5T_NATIVE_UINT64);
}

namespace {
void write_dataset(hid_t file, const std::string& file_path, const std::string& path,
                   hid_t file_type, hid_t memory_type, const void* data,
                   const std::vector<hsize_t>& shape) {
  hsize_t total = 1;
  for (auto d : shape) total *= d;
  if (total == 0) fail(file_path, "refusing to write empty dataset '" + path + "'");
  Hid space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr), H5Sclose);
  // Chunks of up to 64 Ki elements along the first axis; the checksum is per chunk.
  std::vector<hsize_t> chunk = shape;
  hsize_t inner = total / shape[0];
  chunk[0] =
      std::max<hsize_t>(1, std::min<hsize_t>(shape[0], (1u << 16) / std::max<hsize_t>(inner, 1)));
  Hid create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  check_status(H5Pset_chunk(create.get(), static_cast<int>(chunk.size()), chunk.data()), file_path,
               "bad chunk shape for '" + path + "'");
  check_status(H5Pset_fletcher32(create.get()), file_path, "no Fletcher32 filter");
  Hid link(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link.get(), 1);
  Hid dataset = check(
      H5Dcreate2(file, path.c_str(), file_type, space.get(), link.get(), create.get(), H5P_DEFAULT),
      H5Dclose, file_path, "cannot create dataset '" + path + "'");
  check_status(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), file_path,
               "cannot write dataset '" + path + "'");
}

template <typename T>
std::vector<T> read_dataset(hid_t file, const std::string& file_path, const std::string& path,
                            hid_t memory_type, std::vector<hsize_t>* shape_out) {
  Hid dataset = check(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, file_path,
                      "missing dataset '" + path + "'");
  Hid space(H5Dget_space(dataset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(file_path, "bad dataspace of '" + path + "'");
  std::vector<hsize_t> shape(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr);
  hsize_t total = 1;
  for (auto d : shape) total *= d;
  std::vector<T> values(total);
  if (H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail(file_path, "dataset '" + path + "' is corrupt (checksum or read error)");
  if (shape_out) *shape_out = shape;
  return values;
}
}  // namespace

void Hdf5File::create_group(const std::string& path) {
  Hid link(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link.get(), 1);
  check(H5Gcreate2(file_.get(), path.c_str(), link.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
        path_, "cannot create group '" + path + "'");
}

void Hdf5File::write_floats(const std::string& path, const float* data,
                            const std::vector<hsize_t>& shape) {
  write_dataset(file_.get(), path_, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, shape);
}

void Hdf5File::write_uints(const std::string& path, const std::vector<std::uint64_t>& values) {
  write_dataset(file_.get(), path_, path, H5T_STD_U64LE, H5T_NATIVE_UINT64, values.data(),
                {values.size()});
}

std::vector<float> Hdf5File::read_floats(const std::string& path,
                                         std::vector<hsize_t>* shape) const {
  return read_dataset<float>(file_.get(), path_, path, H5T_NATIVE_FLOAT, shape);
}

std::vector<std::uint64_t> Hdf5File::read_uints(const std::string& path) const {
  return read_dataset<std::uint64_t>(file_.get(), path_, path, H5T_NATIVE_UINT64, nullptr);
}

void Hdf5File::link_external(const std::string& path, const std::string& target) {
  Hid link(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link.get(), 1);
  check_status(
      H5Lcreate_external(target.c_str(), "/", file_.get(), path.c_str(), link.get(), H5P_DEFAULT),
      path_, "cannot link '" + path + "' to " + target);
}

std::optional<std::string> Hdf5File::external_target(const std::string& path) const {
  H5L_info_t info;
  if (!has_object(path) || H5Lget_info(file_.get(), path.c_str(), &info, H5P_DEFAULT) < 0 ||
      info.type != H5L_TYPE_EXTERNAL)
    return std::nullopt;
  std::vector<char> value(info.u.val_size);
  const char* file = nullptr;
  const char* object = nullptr;
  unsigned flags = 0;
  if (H5Lget_val(file_.get(), path.c_str(), value.data(), value.size(), H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(value.data(), value.size(), &flags, &file, &object) < 0)
    fail(path_, "cannot read the external link '" + path + "'");
  return std::string(file);
}

std::vector<std::string> Hdf5File::list_group(const std::string& path) const {
  std::vector<std::string> names;
  Hid group = check(H5Gopen2(file_.get(), path.c_str(), H5P_DEFAULT), H5Gclose, path_,
                    "missing group '" + path + "'");
  H5G_info_t info;
  check_status(H5Gget_info(group.get(), &info), path_, "cannot list group '" + path + "'");
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length = H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i,
                                              nullptr, 0, H5P_DEFAULT);
    if (length < 0) fail(path_, "cannot list group '" + path + "'");
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(length));
    names.push_back(name);
  }
  return names;
}

}  // namespace gradshare::ckpt
