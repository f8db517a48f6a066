// loader.cpp: source selection, cross-file checks, subsets, validation split, normalisation.
#include "data/loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/hdf5_reader.h"
#include "data/idx_reader.h"
#include "data/labels.h"
#include "data/normalize.h"

namespace gradshare::data {
namespace {

// A loaded file (pair) and the names its errors use.
struct Loaded {
  Dataset data;
  std::string features_source;
  std::string labels_source;
};

Loaded load_idx(const std::string& images, const std::string& labels) {
  return {read_idx_dataset(images, labels), images, labels};
}

Loaded load_hdf5(const std::string& path, const config::DataConfig& config) {
  const std::string where = path + " (dataset '";
  return {read_hdf5(path, config.features_dataset, config.labels_dataset),
          where + config.features_dataset + "')", where + config.labels_dataset + "')"};
}

// The Fashion-MNIST file `base` in `dir`, gzip-compressed (as Debian ships it) or plain.
std::string fashion_mnist_file(const std::string& dir, const std::string& base) {
  const std::filesystem::path folder(dir);
  std::error_code ec;
  for (const char* suffix : {".gz", ""}) {
    const std::filesystem::path candidate = folder / (base + suffix);
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  }
  throw core::UserError((folder / (base + ".gz")).string() +
                        ": no such file in data.dir (reinstall Debian's dataset-fashion-mnist)");
}

void require(const std::string& value, const char* key, const char* what) {
  if (value.empty()) throw core::UserError(std::string("data.") + key + " is not set: " + what);
}

// Reads the training and (when configured) test sources.
std::pair<Loaded, Loaded> load_sources(const config::DataConfig& config) {
  if (config.dataset == "fashion-mnist") {
    std::error_code ec;
    if (!std::filesystem::is_directory(config.dir, ec))
      throw core::UserError("data.dir " + config.dir +
                            ": no such directory; install Debian's dataset-fashion-mnist package "
                            "(apt install dataset-fashion-mnist) or point data.dir at the "
                            "Fashion-MNIST IDX files");
    const auto file = [&](const char* base) { return fashion_mnist_file(config.dir, base); };
    return {load_idx(file("train-images-idx3-ubyte"), file("train-labels-idx1-ubyte")),
            load_idx(file("t10k-images-idx3-ubyte"), file("t10k-labels-idx1-ubyte"))};
  }
  if (config.dataset != "custom")
    throw core::UserError("data.dataset: unknown dataset '" + config.dataset + "'");
  if (config.format == "idx") {
    const char* need = "custom IDX data needs data.train_images and data.train_labels";
    require(config.train_images, "train_images", need);
    require(config.train_labels, "train_labels", need);
    if (config.test_images.empty() != config.test_labels.empty())
      throw core::UserError("data.test_images and data.test_labels must be given together");
    Loaded train = load_idx(config.train_images, config.train_labels);
    Loaded test;
    if (!config.test_images.empty()) test = load_idx(config.test_images, config.test_labels);
    return {std::move(train), std::move(test)};
  }
  if (config.format == "hdf5") {
    require(config.train_file, "train_file", "custom HDF5 data needs data.train_file");
    Loaded train = load_hdf5(config.train_file, config);
    Loaded test;
    if (!config.test_file.empty()) test = load_hdf5(config.test_file, config);
    return {std::move(train), std::move(test)};
  }
  throw core::UserError("data.format: unknown format '" + config.format + "'");
}

void check_finite(const Loaded& loaded) {
  const Dataset& d = loaded.data;
  const auto bad =
      std::find_if(d.features.begin(), d.features.end(), [](float x) { return !std::isfinite(x); });
  if (bad == d.features.end()) return;
  const auto index = static_cast<std::size_t>(bad - d.features.begin());
  throw core::UserError(loaded.features_source + ": non-finite feature value " +
                        std::to_string(*bad) + " in sample " +
                        std::to_string(index / d.sample_size()));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + ")";
}

void take_first(Dataset& dataset, std::int64_t count, const char* key) {
  if (count <= 0) return;
  const auto n = static_cast<std::size_t>(count);
  if (n > dataset.size()) {
    core::log_warn(std::string("data.") + key + " " + std::to_string(n) + " exceeds the " +
                   std::to_string(dataset.size()) + " samples available; using all of them");
    return;
  }
  dataset.labels.resize(n);
  dataset.features.resize(n * dataset.sample_size());
}

Dataset select(const Dataset& dataset, const std::vector<std::uint32_t>& indices) {
  Dataset out;
  out.sample_shape = dataset.sample_shape;
  out.num_classes = dataset.num_classes;
  out.labels.resize(indices.size());
  out.features.resize(indices.size() * dataset.sample_size());
  gather_batch(dataset, indices, out.features.data(), out.labels.data());
  return out;
}

// Moves round(fraction * n) samples of `train`, chosen by the seed, into the returned set.
Dataset carve_validation(Dataset& train, double fraction, std::uint64_t seed) {
  const std::size_t n = train.size();
  if (fraction <= 0.0) {
    Dataset empty;
    empty.sample_shape = train.sample_shape;
    empty.num_classes = train.num_classes;
    return empty;
  }
  auto count = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(n)));
  count = std::max<std::size_t>(count, 1);
  if (count >= n)
    throw core::UserError("data.validation_fraction " + std::to_string(fraction) + " of " +
                          std::to_string(n) + " training samples leaves none for training");
  // Partial Fisher-Yates: the first `count` positions become a uniform random subset.
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  core::Rng rng = core::Rng::derive(seed, kValidationStream);
  for (std::size_t i = 0; i < count; ++i) std::swap(order[i], order[i + rng.below(n - i)]);
  std::vector<bool> held_out(n, false);
  for (std::size_t i = 0; i < count; ++i) held_out[order[i]] = true;
  std::vector<std::uint32_t> kept, validation;
  kept.reserve(n - count);
  validation.reserve(count);
  for (std::uint32_t i = 0; i < n; ++i) (held_out[i] ? validation : kept).push_back(i);
  Dataset carved = select(train, validation);
  train = select(train, kept);
  return carved;
}

}  // namespace

DataSplits load_data(const config::DataConfig& config, std::uint64_t seed) {
  auto [train, test] = load_sources(config);
  const bool has_test = !test.features_source.empty();
  if (train.data.size() > std::numeric_limits<std::uint32_t>::max())
    throw core::UserError(train.labels_source + ": more than 2^32 - 1 samples are not supported");
  check_finite(train);
  if (has_test) check_finite(test);

  Dataset& train_set = train.data;
  if (train_set.num_classes == 0) train_set.num_classes = count_classes(train_set.labels);
  if (has_test) {
    if (test.data.sample_shape != train_set.sample_shape)
      throw core::UserError(test.features_source + ": sample shape " +
                            shape_text(test.data.sample_shape) + " differs from the training " +
                            "set's " + shape_text(train_set.sample_shape));
    if (test.data.num_classes != 0 && test.data.num_classes != train_set.num_classes)
      throw core::UserError(test.labels_source + ": num_classes " +
                            std::to_string(test.data.num_classes) + " differs from the " +
                            "training set's " + std::to_string(train_set.num_classes));
    check_label_range(test.data.labels, test.labels_source, train_set.num_classes);
  } else {
    test.data.sample_shape = train_set.sample_shape;
  }
  test.data.num_classes = train_set.num_classes;

  take_first(train_set, config.train_subset, "train_subset");
  take_first(test.data, config.test_subset, "test_subset");

  DataSplits splits;
  splits.validation = carve_validation(train_set, config.validation_fraction, seed);
  splits.normalization = fit_normalization(train_set, config.normalize);
  splits.train = std::move(train_set);
  splits.test = std::move(test.data);
  for (Dataset* d : {&splits.train, &splits.validation, &splits.test})
    apply_normalization(*d, splits.normalization);
  return splits;
}

}  // namespace gradshare::data
