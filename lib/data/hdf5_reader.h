// hdf5_reader.h: reader of users' datasets stored in HDF5 files.
//   read_hdf5 - one file holding a features dataset (N, ...) and a labels dataset (N) or (N, 1)
// Features may have any integer or floating type (read as float); sample shape: (N, F) -> {F},
// (N, H, W) -> {1, H, W}, (N, C, H, W) -> {C, H, W}. Labels must be integers. An optional integer
// attribute `num_classes` on the labels dataset fixes the class count (labels are checked
// against it); without it Dataset::num_classes is 0 and the loader derives it.
// Every fault (not HDF5, missing dataset, wrong rank or type, lengths that differ, labels out of
// range, unreadable data) is a core::UserError naming the file and the dataset.
#pragma once

#include <string>

#include "data/dataset.h"

namespace gradshare::data {

Dataset read_hdf5(const std::string& path, const std::string& features_dataset,
                  const std::string& labels_dataset);
// The same checks and labels, num_classes and sample shape, without the features (partitioned
// reading reads them by rows, row_file.h).
Dataset read_hdf5_labels(const std::string& path, const std::string& features_dataset,
                         const std::string& labels_dataset);

}  // namespace gradshare::data
