// loader.cpp: source selection, cross-file checks, subsets, validation split, normalisation.
#include "data/loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <optional>
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
#include "data/row_file.h"
#include "data/sample_reader.h"

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

// The checks of the data section that come before any file is read.
void check_sources(const config::DataConfig& config) {
  if (config.dataset == "fashion-mnist") {
    std::error_code ec;
    if (!std::filesystem::is_directory(config.dir, ec))
      throw core::UserError("data.dir " + config.dir +
                            ": no such directory; install Debian's dataset-fashion-mnist package "
                            "(apt install dataset-fashion-mnist) or point data.dir at the "
                            "Fashion-MNIST IDX files");
    return;
  }
  if (config.dataset != "custom")
    throw core::UserError("data.dataset: unknown dataset '" + config.dataset + "'");
  if (config.format == "idx") {
    const char* need = "custom IDX data needs data.train_images and data.train_labels";
    require(config.train_images, "train_images", need);
    require(config.train_labels, "train_labels", need);
    if (config.test_images.empty() != config.test_labels.empty())
      throw core::UserError("data.test_images and data.test_labels must be given together");
    return;
  }
  if (config.format == "hdf5") {
    require(config.train_file, "train_file", "custom HDF5 data needs data.train_file");
    return;
  }
  throw core::UserError("data.format: unknown format '" + config.format + "'");
}

Loaded load_train_source(const config::DataConfig& config) {
  if (config.dataset == "fashion-mnist")
    return load_idx(fashion_mnist_file(config.dir, "train-images-idx3-ubyte"),
                    fashion_mnist_file(config.dir, "train-labels-idx1-ubyte"));
  if (config.format == "idx") return load_idx(config.train_images, config.train_labels);
  return load_hdf5(config.train_file, config);
}

// The test source; features_source empty when none is configured.
Loaded load_test_source(const config::DataConfig& config) {
  if (config.dataset == "fashion-mnist")
    return load_idx(fashion_mnist_file(config.dir, "t10k-images-idx3-ubyte"),
                    fashion_mnist_file(config.dir, "t10k-labels-idx1-ubyte"));
  if (config.format == "idx")
    return config.test_images.empty() ? Loaded{} : load_idx(config.test_images, config.test_labels);
  return config.test_file.empty() ? Loaded{} : load_hdf5(config.test_file, config);
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

// Which of n training samples the validation split takes: round(fraction * n) of them (at least
// one when the fraction is positive), chosen by the seed.
std::vector<bool> choose_validation(std::size_t n, double fraction, std::uint64_t seed) {
  std::vector<bool> held_out(n, false);
  if (fraction <= 0.0) return held_out;
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
  for (std::size_t i = 0; i < count; ++i) held_out[order[i]] = true;
  return held_out;
}

// Moves the validation samples of `train` into the returned set; both keep the file's order.
Dataset carve_validation(Dataset& train, double fraction, std::uint64_t seed) {
  const auto held_out = choose_validation(train.size(), fraction, seed);
  std::vector<std::uint32_t> kept, validation;
  for (std::uint32_t i = 0; i < train.size(); ++i) (held_out[i] ? validation : kept).push_back(i);
  Dataset carved = select(train, validation);
  if (!validation.empty()) train = select(train, kept);
  return carved;
}

// The training features file and its error name.
struct TrainFeatures {
  std::string path;  // the file
  std::string source;  // as errors name it
};

TrainFeatures train_features(const config::DataConfig& config) {
  if (config.dataset == "fashion-mnist") {
    const auto path = fashion_mnist_file(config.dir, "train-images-idx3-ubyte");
    return {path, path};
  }
  if (config.format == "hdf5")
    return {config.train_file, config.train_file + " (dataset '" + config.features_dataset + "')"};
  return {config.train_images, config.train_images};
}

// The training features read by rows, when data.read asks for (or auto picks) partitioned
// reading; nullopt for the whole-file load.
std::optional<RowFile> open_train_rows(const config::DataConfig& config) {
  if (config.read == "memory") return std::nullopt;
  const auto features = train_features(config);
  std::string why;
  auto rows = config.format == "hdf5" && config.dataset == "custom"
                  ? open_hdf5_rows(features.path, config.features_dataset, &why)
                  : open_idx_rows(features.path, &why);
  if (!rows) {
    if (config.read == "partitions") throw core::UserError("data.read partitions: " + why);
    return std::nullopt;
  }
  constexpr double kAutoBytes = 1024.0 * 1024.0 * 1024.0;
  if (config.read == "auto" &&
      4.0 * static_cast<double>(rows->rows()) * static_cast<double>(rows->row_values()) <= kAutoBytes)
    return std::nullopt;
  return rows;
}

// The training labels (and num_classes, sample shape) without the features.
Loaded load_train_labels(const config::DataConfig& config, const RowFile& rows) {
  Loaded loaded;
  if (config.dataset == "custom" && config.format == "hdf5") {
    const std::string where = config.train_file + " (dataset '";
    loaded = {read_hdf5_labels(config.train_file, config.features_dataset, config.labels_dataset),
              where + config.features_dataset + "')", where + config.labels_dataset + "')"};
  } else {
    const std::string path = config.dataset == "fashion-mnist"
                                 ? fashion_mnist_file(config.dir, "train-labels-idx1-ubyte")
                                 : config.train_labels;
    const IdxArray labels = read_idx(path);
    if (labels.dims.size() > 2 || (labels.dims.size() == 2 && labels.dims[1] != 1))
      throw core::UserError(path + ": labels must have shape (N) or (N, 1)");
    loaded.data.labels = idx_to_labels(labels, path);
    check_label_range(loaded.data.labels, path, kMaxClasses);
    loaded.data.sample_shape = rows.sample_shape();
    loaded.features_source = rows.path();
    loaded.labels_source = path;
  }
  if (loaded.data.labels.size() != rows.rows())
    throw core::UserError(loaded.labels_source + ": mismatched lengths: " +
                          std::to_string(loaded.data.labels.size()) + " labels but " +
                          loaded.features_source + " has " + std::to_string(rows.rows()) +
                          " samples");
  return loaded;
}

}  // namespace

namespace {

// The checks between the training and the test file; the test set takes the training set's
// class count (and shape, when there is no test file).
void check_test_set(Loaded& test, const Dataset& train, bool has_test) {
  if (has_test) {
    if (test.data.sample_shape != train.sample_shape)
      throw core::UserError(test.features_source + ": sample shape " +
                            shape_text(test.data.sample_shape) + " differs from the training " +
                            "set's " + shape_text(train.sample_shape));
    if (test.data.num_classes != 0 && test.data.num_classes != train.num_classes)
      throw core::UserError(test.labels_source + ": num_classes " +
                            std::to_string(test.data.num_classes) + " differs from the " +
                            "training set's " + std::to_string(train.num_classes));
    check_label_range(test.data.labels, test.labels_source, train.num_classes);
  } else {
    test.data.sample_shape = train.sample_shape;
  }
  test.data.num_classes = train.num_classes;
}

// data.read partitions: the training features stay in the file. One streaming pass checks them
// and fits the normalisation; the validation samples (an evaluation set) are read into memory.
DataSplits load_partitioned(const config::DataConfig& config, std::uint64_t seed,
                            bool evaluation_sets, const std::optional<Normalization>& known,
                            RowFile rows) {
  Loaded train = load_train_labels(config, rows);
  Dataset& labels = train.data;
  if (labels.num_classes == 0) labels.num_classes = count_classes(labels.labels);
  Loaded test = evaluation_sets ? load_test_source(config) : Loaded{};
  const bool has_test = !test.features_source.empty();
  if (has_test) check_finite(test);
  check_test_set(test, labels, has_test);
  take_first(test.data, config.test_subset, "test_subset");

  std::size_t n = labels.size();
  if (config.train_subset > 0) {
    if (static_cast<std::size_t>(config.train_subset) > n)
      core::log_warn("data.train_subset " + std::to_string(config.train_subset) + " exceeds the " +
                     std::to_string(n) + " samples available; using all of them");
    else
      n = static_cast<std::size_t>(config.train_subset);
  }
  const auto held_out = choose_validation(n, config.validation_fraction, seed);
  DataSplits splits;
  splits.validation.sample_shape = labels.sample_shape;
  splits.validation.num_classes = labels.num_classes;
  splits.train.sample_shape = labels.sample_shape;
  splits.train.num_classes = labels.num_classes;
  std::vector<std::uint32_t> kept;
  if (known && !evaluation_sets) {
    // The master checked the features and fitted the normalisation in its pass: this rank
    // reads none of them here, only the minibatches it will train.
    for (std::size_t row = 0; row < n; ++row)
      if (!held_out[row]) {
        kept.push_back(static_cast<std::uint32_t>(row));
        splits.train.labels.push_back(labels.labels[row]);
      }
    splits.normalization = *known;
    splits.train.reader =
        std::make_shared<SampleReader>(std::move(rows), std::move(kept), splits.normalization);
    return splits;
  }
  NormalizationFit fit(config.normalize);
  const std::size_t width = rows.row_values();
  constexpr std::size_t kChunkRows = 4096;
  std::vector<float> chunk(kChunkRows * width);
  for (std::size_t first = 0; first < n; first += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, n - first);
    rows.read(first, count, chunk.data());
    for (std::size_t r = 0; r < count; ++r) {
      const float* sample = chunk.data() + r * width;
      const std::size_t row = first + r;
      if (const auto bad = std::find_if(sample, sample + width,
                                        [](float x) { return !std::isfinite(x); });
          bad != sample + width)
        throw core::UserError(train.features_source + ": non-finite feature value " +
                              std::to_string(*bad) + " in sample " + std::to_string(row));
      if (held_out[row]) {
        if (!evaluation_sets) continue;
        splits.validation.features.insert(splits.validation.features.end(), sample,
                                          sample + width);
        splits.validation.labels.push_back(labels.labels[row]);
      } else {
        fit.add(sample, width);
        kept.push_back(static_cast<std::uint32_t>(row));
        splits.train.labels.push_back(labels.labels[row]);
      }
    }
  }
  splits.normalization = known ? *known : fit.result();
  splits.train.reader =
      std::make_shared<SampleReader>(std::move(rows), std::move(kept), splits.normalization);
  splits.test = std::move(test.data);
  for (Dataset* d : {&splits.validation, &splits.test})
    apply_normalization(*d, splits.normalization);
  return splits;
}

}  // namespace

bool reads_by_partitions(const config::DataConfig& config) {
  check_sources(config);
  return open_train_rows(config).has_value();
}

DataSplits load_data(const config::DataConfig& config, std::uint64_t seed, bool evaluation_sets,
                     const std::optional<Normalization>& known) {
  check_sources(config);
  if (auto rows = open_train_rows(config))
    return load_partitioned(config, seed, evaluation_sets, known, std::move(*rows));
  Loaded train = load_train_source(config);
  Loaded test = evaluation_sets ? load_test_source(config) : Loaded{};
  const bool has_test = !test.features_source.empty();
  if (train.data.size() > std::numeric_limits<std::uint32_t>::max())
    throw core::UserError(train.labels_source + ": more than 2^32 - 1 samples are not supported");
  check_finite(train);
  if (has_test) check_finite(test);

  Dataset& train_set = train.data;
  if (train_set.num_classes == 0) train_set.num_classes = count_classes(train_set.labels);
  check_test_set(test, train_set, has_test);

  take_first(train_set, config.train_subset, "train_subset");
  take_first(test.data, config.test_subset, "test_subset");

  DataSplits splits;
  splits.validation = carve_validation(train_set, config.validation_fraction, seed);
  if (!evaluation_sets) splits.validation = select(splits.validation, {});
  splits.normalization = known ? *known : fit_normalization(train_set, config.normalize);
  splits.train = std::move(train_set);
  splits.test = std::move(test.data);
  for (Dataset* d : {&splits.train, &splits.validation, &splits.test})
    apply_normalization(*d, splits.normalization);
  return splits;
}

}  // namespace gradshare::data
