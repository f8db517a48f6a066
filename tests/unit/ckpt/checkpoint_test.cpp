#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint.h"
#include "ckpt/hdf5_file.h"
#include "core/errors.h"

namespace fs = std::filesystem;
using namespace gradshare::ckpt;

namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gs_ckpt_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static Checkpoint sample() {
    Checkpoint c;
    c.gradshare_version = "0.1.0";
    c.config_yaml = "run:\n  name: \"test\"\n";
    c.strategy = "gradient_sharing";
    c.iteration = 1234;
    c.epoch = 3;
    c.partitions_done = {0, 1, 2, 7};
    c.rng_state = {1, 2, 3, 0xffffffffffffffffULL};
    c.world_size = 5;
    c.created = "2026-11-21T05:00:00Z";
    c.parameters.resize(70);
    for (std::size_t i = 0; i < c.parameters.size(); ++i) c.parameters[i] = 0.25f * static_cast<float>(i) - 3.0f;
    c.views = {{"dense_0", "kernel", {6, 10}, 0, 60}, {"dense_0", "bias", {10}, 60, 10}};
    c.optimizer_state = {{"m", std::vector<float>(70, 0.5f)}, {"v", std::vector<float>(70, 0.125f)}};
    c.optimizer_step = 99;
    c.thresholds = {1e-3f, 2e-3f, 5e-4f, 1e-4f};
    c.residuals = std::vector<float>(3 * 70, -1e-5f);
    c.version_vector = {0, 10, 20, 30, 40};
    return c;
  }

  fs::path dir_;
};

TEST_F(CheckpointTest, RoundTripKeepsEveryField) {
  const Checkpoint written = sample();
  write_checkpoint(path("a.h5"), written);
  const Checkpoint read = read_checkpoint(path("a.h5"));
  EXPECT_EQ(read.gradshare_version, written.gradshare_version);
  EXPECT_EQ(read.config_yaml, written.config_yaml);
  EXPECT_EQ(read.strategy, written.strategy);
  EXPECT_EQ(read.iteration, written.iteration);
  EXPECT_EQ(read.epoch, written.epoch);
  EXPECT_EQ(read.partitions_done, written.partitions_done);
  EXPECT_EQ(read.rng_state, written.rng_state);
  EXPECT_EQ(read.world_size, written.world_size);
  EXPECT_EQ(read.created, written.created);
  EXPECT_EQ(read.parameters, written.parameters);
  ASSERT_EQ(read.views.size(), 2u);
  EXPECT_EQ(read.views[0].layer, "dense_0");
  EXPECT_EQ(read.views[0].role, "kernel");
  EXPECT_EQ(read.views[0].shape, (std::vector<std::int64_t>{6, 10}));
  EXPECT_EQ(read.views[1].offset, 60u);
  ASSERT_EQ(read.optimizer_state.size(), 2u);
  EXPECT_EQ(read.optimizer_state[0].name, "m");
  EXPECT_EQ(read.optimizer_state[1].values, written.optimizer_state[1].values);
  EXPECT_EQ(read.optimizer_step, 99);
  EXPECT_EQ(read.thresholds, written.thresholds);
  EXPECT_EQ(read.residuals, written.residuals);
  EXPECT_EQ(read.version_vector, written.version_vector);
  // Nothing but the final file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointTest, EmptyOptionalPartsRoundTrip) {
  Checkpoint c = sample();
  c.partitions_done.clear();
  c.optimizer_state.clear();
  c.thresholds.clear();
  c.residuals.clear();
  c.version_vector.clear();
  write_checkpoint(path("b.h5"), c);
  const Checkpoint read = read_checkpoint(path("b.h5"));
  EXPECT_TRUE(read.partitions_done.empty());
  EXPECT_TRUE(read.optimizer_state.empty());
  EXPECT_TRUE(read.thresholds.empty());
  EXPECT_EQ(read.parameters, c.parameters);
}

TEST_F(CheckpointTest, MissingFileIsAUserError) {
  EXPECT_THROW(read_checkpoint(path("nope.h5")), gradshare::core::UserError);
}

TEST_F(CheckpointTest, TruncatedFileIsDetected) {
  write_checkpoint(path("c.h5"), sample());
  fs::resize_file(path("c.h5"), fs::file_size(path("c.h5")) / 2);
  EXPECT_THROW(read_checkpoint(path("c.h5")), gradshare::core::UserError);
}

TEST_F(CheckpointTest, FlippedByteInParametersIsDetected) {
  Checkpoint c = sample();
  c.parameters.assign(4096, 0.0f);
  for (std::size_t i = 0; i < c.parameters.size(); ++i) c.parameters[i] = static_cast<float>(i);
  c.views.clear();
  c.optimizer_state.clear();
  c.residuals.clear();
  write_checkpoint(path("d.h5"), c);
  // Find the raw parameter bytes in the file and flip one bit inside them.
  std::string bytes;
  {
    std::ifstream in(path("d.h5"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const float marker[2] = {1000.0f, 1001.0f};
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(marker), sizeof marker));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = static_cast<char>(bytes[at + 1] ^ 0x10);
  {
    std::ofstream out(path("d.h5"), std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  try {
    read_checkpoint(path("d.h5"));
    FAIL() << "a flipped byte went unnoticed";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

TEST_F(CheckpointTest, MissingAttributeIsDetected) {
  {
    Hdf5File file = Hdf5File::create(path("e.h5"));
    const float values[3] = {1, 2, 3};
    file.write_floats("/parameters", values, {3});
    file.write_attribute("/", "complete", std::int64_t{1});
    file.write_attribute("/", "format_version", kFormatVersion);
  }
  try {
    read_checkpoint(path("e.h5"));
    FAIL() << "a checkpoint without attributes was accepted";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("missing attribute"), std::string::npos) << error.what();
  }
}

TEST_F(CheckpointTest, OtherFormatVersionIsRejected) {
  {
    Hdf5File file = Hdf5File::create(path("f.h5"));
    file.write_attribute("/", "complete", std::int64_t{1});
    file.write_attribute("/", "format_version", std::int64_t{99});
  }
  try {
    read_checkpoint(path("f.h5"));
    FAIL() << "format version 99 was accepted";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("format version 99"), std::string::npos) << error.what();
  }
}

TEST_F(CheckpointTest, NotHdf5IsRejected) {
  std::ofstream(path("g.h5")) << "this is not HDF5";
  EXPECT_THROW(read_checkpoint(path("g.h5")), gradshare::core::UserError);
}

TEST_F(CheckpointTest, FailedWriteLeavesNoFile) {
  // A directory that does not exist: the write fails and nothing appears.
  EXPECT_THROW(write_checkpoint(path("missing/dir/x.h5"), sample()), gradshare::core::RuntimeError);
  EXPECT_FALSE(fs::exists(path("missing")));
}

}  // namespace
