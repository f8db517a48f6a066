// partitioned_reading_test.cpp: data.read partitions gives the same training samples, labels,
// normalisation and validation split as the whole-file load, from plain IDX and contiguous
// HDF5 files of every element type; it refuses what cannot be read by rows (gzip, chunked
// HDF5) with one line naming the file; the read-ahead serves batches in order and misses
// nothing; a rank that does not evaluate reads no test set.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "config/experiment_config.h"
#include "core/errors.h"
#include "data/loader.h"
#include "data/row_file.h"
#include "data/sample_reader.h"
#include "test_files.h"

namespace gradshare::data {
namespace {

using testing::ScratchDir;

constexpr std::uint32_t kSamples = 300;
constexpr std::uint32_t kWidth = 6;

std::vector<std::uint8_t> pixel_payload() {
  std::vector<std::uint8_t> payload(kSamples * kWidth);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 37 % 251);
  return payload;
}

std::vector<std::uint8_t> label_payload() {
  std::vector<std::uint8_t> labels(kSamples);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % 4);
  return labels;
}

config::DataConfig idx_config(const ScratchDir& dir, const std::string& read) {
  testing::write_bytes(dir.file("x.idx"), testing::idx_bytes(0x08, {kSamples, 2, 3}, pixel_payload()), false);
  testing::write_bytes(dir.file("y.idx"), testing::idx_bytes(0x08, {kSamples}, label_payload()), false);
  auto config = testing::idx_data_config(dir.file("x.idx"), dir.file("y.idx"), dir.file("x.idx"),
                                         dir.file("y.idx"));
  config.read = read;
  return config;
}

// Every training sample through gather_batch, features then labels.
std::pair<std::vector<float>, std::vector<std::int32_t>> everything(const Dataset& train) {
  std::vector<std::uint32_t> all(train.size());
  std::iota(all.begin(), all.end(), 0u);
  std::vector<float> x(all.size() * train.sample_size());
  std::vector<std::int32_t> y(all.size());
  gather_batch(train, all, x.data(), y.data());
  return {x, y};
}

void expect_same_splits(const config::DataConfig& memory_config,
                        const config::DataConfig& partition_config) {
  const auto memory = load_data(memory_config, 7);
  const auto partitions = load_data(partition_config, 7);
  ASSERT_EQ(memory.train.reader, nullptr);
  ASSERT_NE(partitions.train.reader, nullptr);
  EXPECT_TRUE(partitions.train.features.empty());
  EXPECT_EQ(partitions.train.size(), memory.train.size());
  EXPECT_EQ(partitions.train.sample_shape, memory.train.sample_shape);
  EXPECT_EQ(partitions.train.num_classes, memory.train.num_classes);
  EXPECT_EQ(partitions.normalization.offset, memory.normalization.offset);
  EXPECT_FLOAT_EQ(partitions.normalization.scale, memory.normalization.scale);
  EXPECT_EQ(everything(partitions.train), everything(memory.train));
  EXPECT_EQ(partitions.validation.features, memory.validation.features);
  EXPECT_EQ(partitions.validation.labels, memory.validation.labels);
  EXPECT_EQ(partitions.test.features, memory.test.features);
}

TEST(PartitionedReading, PlainIdxMatchesTheWholeLoad) {
  ScratchDir dir;
  auto memory = idx_config(dir, "memory");
  auto partitions = idx_config(dir, "partitions");
  for (const auto* mode : {"scale", "standardize", "none"}) {
    for (const double validation : {0.0, 0.1}) {
      memory.normalize = partitions.normalize = mode;
      memory.validation_fraction = partitions.validation_fraction = validation;
      memory.train_subset = partitions.train_subset = 250;
      SCOPED_TRACE(std::string(mode) + " validation " + std::to_string(validation));
      expect_same_splits(memory, partitions);
    }
  }
}

TEST(PartitionedReading, ContiguousHdf5OfEveryTypeMatchesTheWholeLoad) {
  ScratchDir dir;
  const auto pixels = pixel_payload();
  std::vector<std::int32_t> labels(kSamples);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 4);
  const std::vector<hsize_t> shape{kSamples, kWidth};
  {
    hid_t file = H5Fcreate(dir.file("d.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    testing::write_h5(file, "u8", H5T_NATIVE_UINT8, shape, pixels);
    std::vector<std::int16_t> i16(pixels.begin(), pixels.end());
    for (auto& v : i16) v = static_cast<std::int16_t>(v - 300);
    testing::write_h5(file, "i16", H5T_NATIVE_INT16, shape, i16);
    std::vector<float> f32(pixels.begin(), pixels.end());
    for (auto& v : f32) v = v * 0.25f - 7.5f;
    testing::write_h5(file, "f32", H5T_NATIVE_FLOAT, shape, f32);
    std::vector<double> f64(f32.begin(), f32.end());
    testing::write_h5(file, "f64", H5T_NATIVE_DOUBLE, shape, f64);
    // Big-endian on disk: converted by the row reader as HDF5 would.
    hid_t space = H5Screate_simple(2, shape.data(), nullptr);
    hid_t be = H5Dcreate2(file, "f32be", H5T_IEEE_F32BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(be, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f32.data());
    H5Dclose(be);
    H5Sclose(space);
    testing::write_h5(file, "labels", H5T_NATIVE_INT32, {kSamples}, labels);
    H5Fclose(file);
  }
  for (const auto* name : {"u8", "i16", "f32", "f64", "f32be"}) {
    SCOPED_TRACE(name);
    config::DataConfig config;
    config.dataset = "custom";
    config.format = "hdf5";
    config.train_file = dir.file("d.h5");
    config.features_dataset = name;
    config.normalize = "standardize";
    config.validation_fraction = 0.2;
    auto memory = config;
    memory.read = "memory";
    config.read = "partitions";
    expect_same_splits(memory, config);
  }
}

TEST(PartitionedReading, RefusesFilesThatCannotBeReadByRows) {
  ScratchDir dir;
  auto config = idx_config(dir, "partitions");
  testing::write_bytes(dir.file("x.idx"), testing::idx_bytes(0x08, {kSamples, 2, 3}, pixel_payload()), true);
  const auto message = testing::user_error_of([&] { load_data(config, 1); });
  EXPECT_NE(message.find("data.read partitions: " + dir.file("x.idx") + " is gzip-compressed"),
            std::string::npos) << message;
  config.read = "auto";  // a small file, or one that cannot be read by rows: the whole-file load
  EXPECT_EQ(load_data(config, 1).train.reader, nullptr);

  {
    hid_t file = H5Fcreate(dir.file("c.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {kSamples, kWidth}, chunk[2] = {10, kWidth};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, 2, chunk);
    hid_t data = H5Dcreate2(file, "x", H5T_NATIVE_UINT8, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    H5Dwrite(data, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixel_payload().data());
    H5Dclose(data);
    H5Pclose(plist);
    H5Sclose(space);
    std::vector<std::int32_t> labels(kSamples, 1);
    testing::write_h5(file, "y", H5T_NATIVE_INT32, {kSamples}, labels);
    H5Fclose(file);
  }
  config::DataConfig hdf5;
  hdf5.dataset = "custom";
  hdf5.format = "hdf5";
  hdf5.train_file = dir.file("c.h5");
  hdf5.features_dataset = "x";
  hdf5.labels_dataset = "y";
  hdf5.read = "partitions";
  const auto chunked = testing::user_error_of([&] { load_data(hdf5, 1); });
  EXPECT_NE(chunked.find("is chunked or compressed"), std::string::npos) << chunked;

  // A truncated plain IDX file is named as such.
  const auto bytes = testing::idx_bytes(0x08, {kSamples, 2, 3}, pixel_payload());
  testing::write_bytes(dir.file("x.idx"), {bytes.begin(), bytes.end() - 5}, false);
  config.read = "partitions";
  const auto truncated = testing::user_error_of([&] { load_data(config, 1); });
  EXPECT_NE(truncated.find(dir.file("x.idx") + ": size mismatch"), std::string::npos) << truncated;
}

TEST(PartitionedReading, ReadAheadServesBatchesInOrder) {
  ScratchDir dir;
  const auto splits = load_data(idx_config(dir, "partitions"), 3);
  const auto& train = splits.train;
  const auto whole = load_data(idx_config(dir, "memory"), 3);
  std::vector<std::vector<std::uint32_t>> batches;
  for (std::uint32_t b = 0; b < 40; ++b)  // more than the reader reads ahead
    batches.push_back({b * 7 % kSamples, (b * 13 + 5) % kSamples, (b * 31 + 2) % kSamples});
  read_ahead(train, batches);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let it read ahead
  std::vector<float> x(3 * kWidth), expected(3 * kWidth);
  std::vector<std::int32_t> y(3), expected_y(3);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    if (b == 20) {  // a batch given up (its partition lost): skipped without a miss
      continue;
    }
    gather_batch(train, batches[b], x.data(), y.data());
    gather_batch(whole.train, batches[b], expected.data(), expected_y.data());
    EXPECT_EQ(x, expected);
    EXPECT_EQ(y, expected_y);
  }
  gather_batch(train, batches[3], x.data(), y.data());  // no longer queued: read on the spot
  // 39 batches taken from the queue and one never queued (again), read on the spot. Which of
  // the 39 were read ahead, being read or not reached yet is the reader thread's timing.
  const auto stats = train.reader->stats();
  EXPECT_EQ(stats.batches_ready + stats.batches_waited + stats.batches_missed, 40);
  EXPECT_EQ(stats.batches_unqueued, 1);
  EXPECT_GE(stats.batches_missed, 1);
  EXPECT_EQ(train.reader->queued(), 0u);
}

TEST(PartitionedReading, RanksThatDoNotEvaluateReadNoEvaluationSets) {
  ScratchDir dir;
  auto config = idx_config(dir, "partitions");
  config.validation_fraction = 0.1;
  const auto worker = load_data(config, 1, /*evaluation_sets=*/false);
  EXPECT_EQ(worker.test.size(), 0u);
  EXPECT_EQ(worker.validation.size(), 0u);
  EXPECT_EQ(worker.train.size(), kSamples - 30);
  const auto master = load_data(config, 1);
  EXPECT_EQ(master.test.size(), kSamples);
  EXPECT_EQ(master.validation.size(), 30u);
}

// Given the master's normalisation, a worker reading by partitions reads no feature at start-up
// (the master's pass checks them: a NaN fails its load, not the worker's) and trains on exactly
// the master's samples.
TEST(PartitionedReading, WorkersGivenTheNormalisationSkipTheStartUpPass) {
  ScratchDir dir;
  auto config = idx_config(dir, "partitions");
  config.normalize = "standardize";
  config.validation_fraction = 0.1;
  const auto master = load_data(config, 3);
  const auto worker = load_data(config, 3, /*evaluation_sets=*/false, master.normalization);
  EXPECT_EQ(worker.normalization.offset, master.normalization.offset);
  EXPECT_EQ(worker.normalization.scale, master.normalization.scale);
  EXPECT_EQ(everything(worker.train), everything(master.train));

  std::vector<float> values(kSamples * kWidth, 0.5f);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 7);
  values[5 * kWidth + 2] = std::nanf("");  // a training sample (the validation rows vary)
  std::vector<std::uint8_t> payload(values.size() * 4);
  for (std::size_t i = 0; i < values.size(); ++i) {  // IDX is big-endian
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int b = 0; b < 4; ++b) payload[i * 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(bits >> (24 - 8 * b));
  }
  testing::write_bytes(dir.file("x.idx"), testing::idx_bytes(0x0D, {kSamples, 2, 3}, payload), false);
  config.validation_fraction = 0.0;
  EXPECT_THROW(load_data(config, 3), core::UserError);
  const auto unchecked = load_data(config, 3, false, master.normalization);
  EXPECT_EQ(unchecked.train.size(), kSamples);
}

}  // namespace
}  // namespace gradshare::data
