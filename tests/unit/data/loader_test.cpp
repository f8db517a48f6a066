// loader_test.cpp: load_data on small custom IDX and HDF5 sets: sources, subsets, validation
// split, normalisation and the cross-file checks.
#include "data/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "test_files.h"

namespace gradshare::data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::idx_bytes;
using testing::idx_data_config;
using testing::ScratchDir;
using testing::user_error_of;
using testing::write_bytes;

constexpr std::uint32_t kTrain = 20;
constexpr std::uint32_t kTest = 6;

// Sample i of a set is the 2x2 image {base + i, 0, 2 * i, 100}; its label is i % classes.
void write_set(const std::string& images, const std::string& labels, std::uint32_t count,
               std::uint8_t base, int classes) {
  std::vector<std::uint8_t> pixels, ids;
  for (std::uint32_t i = 0; i < count; ++i) {
    pixels.insert(pixels.end(),
                  {static_cast<std::uint8_t>(base + i), 0, static_cast<std::uint8_t>(2 * i), 100});
    ids.push_back(static_cast<std::uint8_t>(i % classes));
  }
  write_bytes(images, idx_bytes(0x08, {count, 2, 2}, pixels), true);
  write_bytes(labels, idx_bytes(0x08, {count}, ids), false);
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = idx_data_config(dir_.file("train-images.gz"), dir_.file("train-labels"),
                              dir_.file("test-images.gz"), dir_.file("test-labels"));
    config_.normalize = "none";
    write_set(config_.train_images, config_.train_labels, kTrain, 10, 4);
    write_set(config_.test_images, config_.test_labels, kTest, 200, 4);
  }
  // The file index of a loaded, unnormalised training sample.
  static std::uint32_t id_of(const Dataset& d, std::size_t i) {
    return static_cast<std::uint32_t>(d.sample(i)[0]) - 10;
  }
  ScratchDir dir_;
  config::DataConfig config_;
};

TEST_F(LoaderTest, ReadsCustomIdx) {
  const DataSplits splits = load_data(config_, 1);
  EXPECT_EQ(splits.train.size(), kTrain);
  EXPECT_EQ(splits.test.size(), kTest);
  EXPECT_EQ(splits.validation.size(), 0u);
  EXPECT_EQ(splits.train.sample_shape, (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(splits.validation.sample_shape, splits.train.sample_shape);
  EXPECT_EQ(splits.train.num_classes, 4);
  EXPECT_EQ(splits.test.num_classes, 4);
  EXPECT_EQ(splits.test.sample(5)[0], 205.0f);
  EXPECT_EQ(splits.test.labels[5], 1);
}

TEST_F(LoaderTest, ScaleUsesTheTrainingRange) {
  config_.normalize = "scale";
  const DataSplits splits = load_data(config_, 1);
  // Training pixels span 0 .. 100 (the constant last pixel); 2 * 19 = 38 and 10 + 19 = 29.
  EXPECT_FLOAT_EQ(splits.normalization.offset, 0.0f);
  EXPECT_FLOAT_EQ(splits.normalization.scale, 1.0f / 100.0f);
  const auto [low, high] =
      std::minmax_element(splits.train.features.begin(), splits.train.features.end());
  EXPECT_FLOAT_EQ(*low, 0.0f);
  EXPECT_FLOAT_EQ(*high, 1.0f);
  EXPECT_FLOAT_EQ(splits.test.sample(0)[0], 2.0f);  // 200 with the training statistics
}

TEST_F(LoaderTest, StandardizeGivesZeroMeanUnitVariance) {
  config_.normalize = "standardize";
  const DataSplits splits = load_data(config_, 1);
  double sum = 0.0, squares = 0.0;
  for (float x : splits.train.features) {
    sum += x;
    squares += double{x} * x;
  }
  const double n = static_cast<double>(splits.train.features.size());
  EXPECT_NEAR(sum / n, 0.0, 1e-5);
  EXPECT_NEAR(squares / n - (sum / n) * (sum / n), 1.0, 1e-4);
  EXPECT_GT(splits.normalization.scale, 0.0f);
}

TEST_F(LoaderTest, SubsetsTakeTheFirstSamples) {
  config_.train_subset = 5;
  config_.test_subset = 2;
  const DataSplits splits = load_data(config_, 1);
  ASSERT_EQ(splits.train.size(), 5u);
  ASSERT_EQ(splits.test.size(), 2u);
  EXPECT_EQ(splits.train.features.size(), 5u * 4u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(id_of(splits.train, i), i);
  // Classes come from the whole training file, not the subset.
  config_.train_subset = 2;
  EXPECT_EQ(load_data(config_, 1).train.num_classes, 4);
  config_.train_subset = 1000;
  EXPECT_EQ(load_data(config_, 1).train.size(), kTrain);
}

TEST_F(LoaderTest, ValidationSplitIsDisjointAndDeterministic) {
  config_.validation_fraction = 0.25;
  const DataSplits a = load_data(config_, 11);
  ASSERT_EQ(a.validation.size(), 5u);
  ASSERT_EQ(a.train.size(), 15u);
  std::set<std::uint32_t> ids;
  for (std::size_t i = 0; i < a.train.size(); ++i) ids.insert(id_of(a.train, i));
  for (std::size_t i = 0; i < a.validation.size(); ++i) {
    EXPECT_EQ(ids.count(id_of(a.validation, i)), 0u);
    ids.insert(id_of(a.validation, i));
    EXPECT_EQ(a.validation.labels[i], static_cast<std::int32_t>(id_of(a.validation, i) % 4));
  }
  EXPECT_EQ(ids.size(), kTrain);
  EXPECT_EQ(load_data(config_, 11).validation.features, a.validation.features);
  bool differs = false;
  for (std::uint64_t seed = 12; seed < 20 && !differs; ++seed)
    differs = load_data(config_, seed).validation.features != a.validation.features;
  EXPECT_TRUE(differs);
}

TEST_F(LoaderTest, NormalizationIgnoresTheValidationSamples) {
  config_.validation_fraction = 0.5;
  config_.normalize = "standardize";
  const DataSplits splits = load_data(config_, 3);
  double sum = 0.0;
  for (float x : splits.train.features) sum += x;
  EXPECT_NEAR(sum / static_cast<double>(splits.train.features.size()), 0.0, 1e-5);
  double validation_sum = 0.0;
  for (float x : splits.validation.features) validation_sum += x;
  EXPECT_GT(std::abs(validation_sum), 1e-3);  // fitted elsewhere, so not centred exactly
}

TEST_F(LoaderTest, ValidationNeedsTrainingSamplesLeft) {
  config_.train_subset = 1;
  config_.validation_fraction = 0.1;
  EXPECT_THAT(user_error_of([&] { load_data(config_, 1); }), HasSubstr("data.validation_fraction"));
}

TEST_F(LoaderTest, TestLabelsMustBeTrainingClasses) {
  write_set(config_.test_images, config_.test_labels, kTest, 200, 6);
  EXPECT_THAT(user_error_of([&] { load_data(config_, 1); }),
              AllOf(HasSubstr(config_.test_labels + ": label 4 of sample 4 is out of range"),
                    HasSubstr("0..3")));
}

TEST_F(LoaderTest, TestShapeMustMatch) {
  write_bytes(config_.test_images, idx_bytes(0x08, {kTest, 4}, std::vector<std::uint8_t>(24)),
              false);
  EXPECT_THAT(
      user_error_of([&] { load_data(config_, 1); }),
      AllOf(HasSubstr(config_.test_images + ": sample shape (4) differs"), HasSubstr("(1, 2, 2)")));
}

TEST_F(LoaderTest, ConfigMistakes) {
  config::DataConfig no_train = config_;
  no_train.train_images.clear();
  EXPECT_THAT(user_error_of([&] { load_data(no_train, 1); }),
              HasSubstr("data.train_images is not set"));
  config::DataConfig half_test = config_;
  half_test.test_labels.clear();
  EXPECT_THAT(user_error_of([&] { load_data(half_test, 1); }),
              HasSubstr("data.test_images and data.test_labels"));
  config::DataConfig no_file = config_;
  no_file.format = "hdf5";
  EXPECT_THAT(user_error_of([&] { load_data(no_file, 1); }),
              HasSubstr("data.train_file is not set"));
  config::DataConfig no_dir;
  no_dir.dir = dir_.file("absent");
  EXPECT_THAT(user_error_of([&] { load_data(no_dir, 1); }),
              AllOf(HasSubstr(no_dir.dir), HasSubstr("dataset-fashion-mnist")));
}

TEST_F(LoaderTest, WithoutTestFilesTheTestSetIsEmpty) {
  config_.test_images.clear();
  config_.test_labels.clear();
  const DataSplits splits = load_data(config_, 1);
  EXPECT_EQ(splits.test.size(), 0u);
  EXPECT_EQ(splits.test.sample_shape, splits.train.sample_shape);
}

TEST_F(LoaderTest, FashionMnistLayoutInAnyDir) {
  config::DataConfig fashion;
  fashion.dir = dir_.file("");
  write_set(dir_.file("train-images-idx3-ubyte.gz"), dir_.file("train-labels-idx1-ubyte"), 8, 0, 2);
  write_set(dir_.file("t10k-images-idx3-ubyte"), dir_.file("elsewhere"), 3, 0, 2);
  EXPECT_THAT(user_error_of([&] { load_data(fashion, 1); }),
              AllOf(HasSubstr("t10k-labels-idx1-ubyte.gz: no such file in data.dir"),
                    HasSubstr("dataset-fashion-mnist")));
  write_bytes(dir_.file("t10k-labels-idx1-ubyte"), idx_bytes(0x08, {3}, {0, 1, 1}), false);
  const DataSplits splits = load_data(fashion, 1);
  EXPECT_EQ(splits.train.size(), 8u);
  EXPECT_EQ(splits.test.labels, (std::vector<std::int32_t>{0, 1, 1}));
}

TEST(LoaderHdf5, TrainAndTestFiles) {
  ScratchDir dir;
  config::DataConfig config;
  config.dataset = "custom";
  config.format = "hdf5";
  config.train_file = dir.file("train.h5");
  config.test_file = dir.file("test.h5");
  config.features_dataset = "data";
  config.labels_dataset = "target";
  config.normalize = "none";
  const auto make = [&](const std::string& path, float value, std::int64_t classes) {
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    testing::write_h5(file, "data", H5T_NATIVE_FLOAT, {2, 3}, std::vector<float>(6, value));
    testing::write_h5(file, "target", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{0, 1});
    if (classes > 0) testing::write_num_classes(file, "target", classes);
    H5Fclose(file);
  };
  make(config.train_file, 1.0f, 3);
  make(config.test_file, 2.0f, 0);
  const DataSplits splits = load_data(config, 1);
  EXPECT_EQ(splits.train.num_classes, 3);  // the attribute, not max label + 1
  EXPECT_EQ(splits.test.num_classes, 3);
  EXPECT_EQ(splits.test.features, std::vector<float>(6, 2.0f));
  make(config.test_file, 2.0f, 2);
  EXPECT_THAT(user_error_of([&] { load_data(config, 1); }),
              AllOf(HasSubstr(config.test_file + " (dataset 'target'): num_classes 2 differs"),
                    HasSubstr("training set's 3")));
  make(config.train_file, std::nanf(""), 0);
  EXPECT_THAT(user_error_of([&] { load_data(config, 1); }),
              HasSubstr(config.train_file + " (dataset 'data'): non-finite feature value nan in "
                                            "sample 0"));
}

}  // namespace
}  // namespace gradshare::data
