// fashion_mnist_test.cpp: the real Fashion-MNIST from Debian's dataset-fashion-mnist, checked
// against properties published with the dataset (sizes, balanced classes, first labels, pixel
// mean 0.2860 and standard deviation 0.3530 on the training set).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "data/idx_reader.h"
#include "data/loader.h"

namespace gradshare::data {
namespace {

const char* const kDir = "/usr/share/datasets/fashion-mnist";

class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::is_directory(kDir))
        << kDir << " is missing: install Debian's dataset-fashion-mnist (scripts/setup does)";
  }
};

std::vector<int> histogram(const Dataset& dataset) {
  std::vector<int> counts(dataset.num_classes, 0);
  for (std::int32_t label : dataset.labels) ++counts.at(label);
  return counts;
}

TEST_F(FashionMnistTest, RawTrainingImages) {
  const IdxArray images = read_idx(std::string(kDir) + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(images.type, IdxType::kUint8);
  EXPECT_EQ(images.dims, (std::vector<std::int64_t>{60000, 28, 28}));
  EXPECT_EQ(images.bytes.size(), 60000u * 28 * 28);
}

TEST_F(FashionMnistTest, DefaultConfigLoadsTheWholeSet) {
  const DataSplits splits = load_data(config::DataConfig{}, 42);
  ASSERT_EQ(splits.train.size(), 60000u);
  ASSERT_EQ(splits.test.size(), 10000u);
  EXPECT_EQ(splits.validation.size(), 0u);
  EXPECT_EQ(splits.train.sample_shape, (std::vector<std::int64_t>{1, 28, 28}));
  EXPECT_EQ(splits.train.features.size(), 60000u * 784);
  EXPECT_EQ(splits.train.num_classes, 10);
  EXPECT_EQ(histogram(splits.train), std::vector<int>(10, 6000));
  EXPECT_EQ(histogram(splits.test), std::vector<int>(10, 1000));
  EXPECT_EQ(std::vector<std::int32_t>(splits.train.labels.begin(), splits.train.labels.begin() + 6),
            (std::vector<std::int32_t>{9, 0, 0, 3, 0, 2}));
  EXPECT_EQ(std::vector<std::int32_t>(splits.test.labels.begin(), splits.test.labels.begin() + 6),
            (std::vector<std::int32_t>{9, 2, 1, 1, 6, 1}));
  // scale: pixels 0..255 -> [0, 1]
  EXPECT_FLOAT_EQ(splits.normalization.offset, 0.0f);
  EXPECT_FLOAT_EQ(splits.normalization.scale, 1.0f / 255.0f);
  const auto [low, high] =
      std::minmax_element(splits.test.features.begin(), splits.test.features.end());
  EXPECT_FLOAT_EQ(*low, 0.0f);
  EXPECT_FLOAT_EQ(*high, 1.0f);
}

TEST_F(FashionMnistTest, PublishedMeanAndStandardDeviation) {
  config::DataConfig config;
  config.normalize = "standardize";
  const DataSplits splits = load_data(config, 42);
  EXPECT_NEAR(splits.normalization.offset / 255.0, 0.2860, 5e-4);
  EXPECT_NEAR(1.0 / (splits.normalization.scale * 255.0), 0.3530, 5e-4);
}

TEST_F(FashionMnistTest, SubsetAndValidation) {
  config::DataConfig config;
  config.train_subset = 10000;
  config.test_subset = 500;
  config.validation_fraction = 0.1;
  const DataSplits splits = load_data(config, 7);
  EXPECT_EQ(splits.train.size(), 9000u);
  EXPECT_EQ(splits.validation.size(), 1000u);
  EXPECT_EQ(splits.test.size(), 500u);
  EXPECT_EQ(splits.validation.num_classes, 10);
}

}  // namespace
}  // namespace gradshare::data
