// hdf5_reader.cpp: HDF5 datasets -> Dataset through the HDF5 C API.
//
// HDF5 prints its error stack to stderr by default; that is switched off and the innermost
// message of the stack is folded into the UserError instead.
#include "data/hdf5_reader.h"

#include <hdf5.h>

#include <filesystem>
#include <new>
#include <system_error>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "data/labels.h"

namespace gradshare::data {
namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

herr_t take_innermost(unsigned depth, const H5E_error2_t* error, void* out) {
  if (depth == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
  return 0;
}

// The most specific message of HDF5's current error stack.
std::string hdf5_error() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "unknown HDF5 error" : message;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw core::UserError(path + ": " + what);
}

std::vector<hsize_t> shape_of(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  if (!space.valid()) return {};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string text = "(";
  for (std::size_t d = 0; d < dims.size(); ++d) text += (d ? ", " : "") + std::to_string(dims[d]);
  return text + ")";
}

struct Listing {
  std::string text;
  int count = 0;
};

herr_t list_dataset(hid_t group, const char* name, const H5L_info_t*, void* out) {
  auto& listing = *static_cast<Listing*>(out);
  Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) return 0;
  if (listing.count++ == 8) listing.text += ", ...";
  if (listing.count > 8) return 0;
  listing.text += (listing.count > 1 ? ", " : "") + std::string(name) + " " +
                  shape_text(shape_of(object.get()));
  return 0;
}

// "a (100, 4), b (100)", or "none".
std::string list_datasets(hid_t file) {
  Listing listing;
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, list_dataset, &listing);
  H5Eclear2(H5E_DEFAULT);
  return listing.count == 0 ? "none" : listing.text;
}

Handle open_dataset(hid_t file, const std::string& path, const std::string& name, const char* key) {
  Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) {
    H5Eclear2(H5E_DEFAULT);
    fail(path, "no dataset '" + name + "' (data." + key +
                   "); datasets in the file: " + list_datasets(file));
  }
  return dataset;
}

H5T_class_t type_class(hid_t dataset) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  return type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
}

std::size_t element_count(const std::vector<hsize_t>& dims) {
  std::size_t count = 1;
  for (hsize_t d : dims) count *= d;
  return count;
}

template <typename T>
std::vector<T> read_all(hid_t dataset, hid_t memory_type, const std::vector<hsize_t>& dims,
                        const std::string& path, const std::string& name) {
  std::vector<T> values;
  try {
    values.resize(element_count(dims));
  } catch (const std::bad_alloc&) {
    fail(path, "dataset '" + name + "' " + shape_text(dims) + " does not fit in memory");
  } catch (const std::length_error&) {
    fail(path, "dataset '" + name + "' " + shape_text(dims) + " does not fit in memory");
  }
  if (H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail(path, "cannot read dataset '" + name + "': " + hdf5_error());
  return values;
}

// The integer attribute `num_classes` of the labels dataset, or 0 when it has none.
std::int64_t num_classes_attribute(hid_t labels, const std::string& path, const std::string& name) {
  if (H5Aexists(labels, "num_classes") <= 0) return 0;
  Handle attribute(H5Aopen(labels, "num_classes", H5P_DEFAULT), H5Aclose);
  Handle space(attribute.valid() ? H5Aget_space(attribute.get()) : -1, H5Sclose);
  std::int64_t value = 0;
  if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1 ||
      H5Aread(attribute.get(), H5T_NATIVE_INT64, &value) < 0) {
    H5Eclear2(H5E_DEFAULT);
    fail(path, "attribute num_classes of dataset '" + name + "' must be one integer");
  }
  if (value < 1 || value > kMaxClasses)
    fail(path, "attribute num_classes of dataset '" + name + "' is " + std::to_string(value) +
                   " (expected 1.." + std::to_string(kMaxClasses) + ")");
  return value;
}

}  // namespace

namespace {

Dataset read_file(const std::string& path, const std::string& features_dataset,
                  const std::string& labels_dataset, bool with_features) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "cannot open: no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "cannot open: is a directory");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail(path, "not an HDF5 file");
  }
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) fail(path, "cannot open as HDF5: " + hdf5_error());

  Handle features = open_dataset(file.get(), path, features_dataset, "features_dataset");
  Handle labels = open_dataset(file.get(), path, labels_dataset, "labels_dataset");

  const H5T_class_t feature_class = type_class(features.get());
  if (feature_class != H5T_INTEGER && feature_class != H5T_FLOAT)
    fail(path, "features dataset '" + features_dataset + "' must hold integers or floats");
  if (type_class(labels.get()) != H5T_INTEGER)
    fail(path, "labels dataset '" + labels_dataset + "' must hold integer class ids");

  const std::vector<hsize_t> feature_dims = shape_of(features.get());
  const std::vector<hsize_t> label_dims = shape_of(labels.get());
  if (feature_dims.size() < 2 || feature_dims.size() > 4)
    fail(path, "features dataset '" + features_dataset + "' has rank " +
                   std::to_string(feature_dims.size()) + " " + shape_text(feature_dims) +
                   "; expected (N, features), (N, height, width) or (N, channels, height, width)");
  if (label_dims.empty() || label_dims.size() > 2 || (label_dims.size() == 2 && label_dims[1] != 1))
    fail(path, "labels dataset '" + labels_dataset + "' has shape " + shape_text(label_dims) +
                   "; expected (N) or (N, 1)");
  if (label_dims[0] != feature_dims[0])
    fail(path, "mismatched lengths: features dataset '" + features_dataset + "' has " +
                   std::to_string(feature_dims[0]) + " samples but labels dataset '" +
                   labels_dataset + "' has " + std::to_string(label_dims[0]));
  if (element_count(feature_dims) == 0)
    fail(path,
         "features dataset '" + features_dataset + "' " + shape_text(feature_dims) + " is empty");

  Dataset dataset;
  const std::int64_t declared_classes = num_classes_attribute(labels.get(), path, labels_dataset);
  const auto wide_labels =
      read_all<std::int64_t>(labels.get(), H5T_NATIVE_INT64, label_dims, path, labels_dataset);
  const std::int64_t limit = declared_classes > 0 ? declared_classes : kMaxClasses;
  dataset.labels.reserve(wide_labels.size());
  for (std::size_t i = 0; i < wide_labels.size(); ++i) {
    const std::int64_t label = wide_labels[i];
    if (label < 0 || label >= limit)
      fail(path, "dataset '" + labels_dataset + "': label " + std::to_string(label) +
                     " of sample " + std::to_string(i) + " is out of range (" +
                     (declared_classes > 0 ? "the num_classes attribute allows 0.."
                                           : "class ids must lie in 0..") +
                     std::to_string(limit - 1) + ")");
    dataset.labels.push_back(static_cast<std::int32_t>(label));
  }
  dataset.num_classes = static_cast<std::int32_t>(declared_classes);

  if (with_features)
    dataset.features =
        read_all<float>(features.get(), H5T_NATIVE_FLOAT, feature_dims, path, features_dataset);
  if (feature_dims.size() == 3) dataset.sample_shape.push_back(1);
  for (std::size_t d = 1; d < feature_dims.size(); ++d)
    dataset.sample_shape.push_back(static_cast<std::int64_t>(feature_dims[d]));
  return dataset;
}

}  // namespace

Dataset read_hdf5(const std::string& path, const std::string& features_dataset,
                  const std::string& labels_dataset) {
  return read_file(path, features_dataset, labels_dataset, true);
}

Dataset read_hdf5_labels(const std::string& path, const std::string& features_dataset,
                         const std::string& labels_dataset) {
  return read_file(path, features_dataset, labels_dataset, false);
}

}  // namespace gradshare::data
