// loader.h: from the data section of the config to ready train / validation / test sets.
//   load_data - reads the files, validates them against each other, applies the subsets, carves
//               the validation split and normalises (statistics from the training split only)
//
// Sources: dataset fashion-mnist reads data.dir (Debian's dataset-fashion-mnist: the four
// train-/t10k-*-ubyte files, .gz or plain); custom + idx reads data.train_images/train_labels
// and, when given, data.test_images/test_labels; custom + hdf5 reads data.train_file and, when
// given, data.test_file, using data.features_dataset and data.labels_dataset in both. Without
// test files the test set is empty. Relative paths are relative to the working directory.
//
// num_classes: the training file's num_classes attribute (HDF5) or max training label + 1,
// taken over the whole training file before subsetting; test labels must lie below it.
// Subsets take the first N samples of a file (N larger than the file: all of it). The
// validation split takes round(validation_fraction * n) training samples (at least one when
// the fraction is positive), chosen by Rng::derive(seed, kValidationStream); both parts keep
// the file's order.
#pragma once

#include <cstdint>

#include <optional>

#include "config/experiment_config.h"
#include "data/dataset.h"

namespace gradshare::data {

// Rng stream of the validation split: Rng::derive(seed, kValidationStream).
inline constexpr std::uint64_t kValidationStream = 3;

// Errors are core::UserError naming the file (or the config key) and the fault.
// data.read partitions (or auto on a large file): the training split's features stay in the
// file (Dataset::reader, sample_reader.h), read by the samples trained; one streaming pass
// checks them and fits the normalisation. Without `evaluation_sets` (a rank that never
// evaluates) neither the test set nor the validation samples are read into memory.
// `known`: the normalisation another rank fitted (the master, which loads first and checks
// every feature); a rank without evaluation sets that reads by partitions then reads no
// feature at start-up.
DataSplits load_data(const config::DataConfig& config, std::uint64_t seed,
                     bool evaluation_sets = true,
                     const std::optional<Normalization>& known = std::nullopt);

// Whether load_data reads the training features by partitions (data.read, and for auto the
// file's size and layout). Errors as load_data's.
bool reads_by_partitions(const config::DataConfig& config);

}  // namespace gradshare::data
