// example_script_test.cpp: scripts/make-example-hdf5 writes files that load_data reads, and its
// Fashion-MNIST export holds the same images and labels as the IDX files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "data/hdf5_reader.h"
#include "data/idx_reader.h"
#include "data/loader.h"
#include "test_files.h"

namespace gradshare::data {
namespace {

const char* const kPython = "/usr/bin/python3";

class ExampleScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system((std::string(kPython) + " -c 'import h5py' 2>/dev/null").c_str()) != 0)
      GTEST_SKIP() << "needs " << kPython << " with h5py (Debian: python3-h5py)";
  }
  // Runs the script with `arguments`, writing into out_dir_; returns its exit status.
  int run(const std::string& arguments) {
    const std::string command = std::string(kPython) + " " + GRADSHARE_SOURCE_DIR +
                                "/scripts/make-example-hdf5 --out-dir " + out_dir_ + " " +
                                arguments + " > " + dir_.file("stdout") + " 2>&1";
    return std::system(command.c_str());
  }
  testing::ScratchDir dir_;
  std::string out_dir_ = dir_.file("out");
};

TEST_F(ExampleScriptTest, SyntheticCompressedLoads) {
  ASSERT_EQ(run("--source synthetic --train 300 --test 60 --classes 3 --features 5 --compress"), 0);
  config::DataConfig config;
  config.dataset = "custom";
  config.format = "hdf5";
  config.train_file = out_dir_ + "/train.h5";
  config.test_file = out_dir_ + "/test.h5";
  config.normalize = "standardize";
  const DataSplits splits = load_data(config, 1);
  EXPECT_EQ(splits.train.size(), 300u);
  EXPECT_EQ(splits.test.size(), 60u);
  EXPECT_EQ(splits.train.sample_shape, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(splits.train.num_classes, 3);
}

TEST_F(ExampleScriptTest, FashionMnistExportMatchesIdx) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(std::filesystem::is_directory(fashion)) << "install dataset-fashion-mnist";
  ASSERT_EQ(run("--source fashion-mnist --train 200 --test 50"), 0);
  const Dataset exported = read_hdf5(out_dir_ + "/test.h5", "features", "labels");
  EXPECT_EQ(exported.num_classes, 10);
  const Dataset original = read_idx_dataset(fashion + "/t10k-images-idx3-ubyte.gz",
                                            fashion + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_EQ(exported.size(), 50u);
  EXPECT_EQ(exported.sample_shape, original.sample_shape);
  EXPECT_TRUE(
      std::equal(exported.features.begin(), exported.features.end(), original.features.begin()));
  EXPECT_TRUE(std::equal(exported.labels.begin(), exported.labels.end(), original.labels.begin()));
}

}  // namespace
}  // namespace gradshare::data
