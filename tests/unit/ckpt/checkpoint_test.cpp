#include "ckpt/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ckpt/describe.h"
#include "ckpt/hdf5_file.h"
#include "core/errors.h"

namespace fs = std::filesystem;
using namespace gradshare::ckpt;

namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gs_ckpt_test_" + std::to_string(::getpid()) + "_" +
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
    for (std::size_t i = 0; i < c.parameters.size(); ++i)
      c.parameters[i] = 0.25f * static_cast<float>(i) - 3.0f;
    c.views = {{"dense_0", "kernel", {6, 10}, 0, 60}, {"dense_0", "bias", {10}, 60, 10}};
    c.optimizer_state = {{"m", std::vector<float>(70, 0.5f)},
                         {"v", std::vector<float>(70, 0.125f)}};
    c.optimizer_step = 99;
    // Twelve workers: "10" and "11" sort before "2" in HDF5's listing.
    for (int w = 0; w < 12; ++w)
      c.worker_optimizers.push_back(
          {100 + w,
           {{"m", std::vector<float>(70, 0.5f * w)}, {"v", std::vector<float>(70, 0.25f + w)}}});
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
  ASSERT_EQ(read.worker_optimizers.size(), written.worker_optimizers.size());
  for (std::size_t w = 0; w < written.worker_optimizers.size(); ++w) {
    const auto& got = read.worker_optimizers[w];
    const auto& want = written.worker_optimizers[w];
    EXPECT_EQ(got.step, want.step) << "worker " << w;
    ASSERT_EQ(got.buffers.size(), 2u) << "worker " << w;
    for (std::size_t b = 0; b < 2; ++b) {
      EXPECT_EQ(got.buffers[b].name, want.buffers[b].name) << "worker " << w;
      EXPECT_EQ(got.buffers[b].values, want.buffers[b].values) << "worker " << w;
    }
  }
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
  c.worker_optimizers.clear();
  write_checkpoint(path("b.h5"), c);
  const Checkpoint read = read_checkpoint(path("b.h5"));
  EXPECT_TRUE(read.partitions_done.empty());
  EXPECT_TRUE(read.optimizer_state.empty());
  EXPECT_TRUE(read.worker_optimizers.empty());
  EXPECT_TRUE(read.thresholds.empty());
  EXPECT_EQ(read.parameters, c.parameters);
}

TEST_F(CheckpointTest, WorkersWithoutBuffersKeepTheirSteps) {
  Checkpoint c = sample();
  c.worker_optimizers = {{7, {}}, {9, {}}};  // sgd: no state, only the step
  write_checkpoint(path("sgd.h5"), c);
  const Checkpoint read = read_checkpoint(path("sgd.h5"));
  ASSERT_EQ(read.worker_optimizers.size(), 2u);
  EXPECT_EQ(read.worker_optimizers[0].step, 7);
  EXPECT_EQ(read.worker_optimizers[1].step, 9);
  EXPECT_TRUE(read.worker_optimizers[1].buffers.empty());
}

// A file with only the single state (every file written before the per-worker list existed
// looks like this) gives every worker that state.
TEST_F(CheckpointTest, SingleStateServesEveryWorker) {
  Checkpoint c = sample();
  c.worker_optimizers.clear();
  write_checkpoint(path("single.h5"), c);
  {
    Hdf5File file = Hdf5File::open_read(path("single.h5"));
    EXPECT_FALSE(file.has_object("/workers"));
  }
  const Checkpoint read = read_checkpoint(path("single.h5"));
  for (std::size_t w : {0u, 1u, 5u}) {
    const OptimizerState state = optimizer_for_worker(read, w);
    EXPECT_EQ(state.step, 99);
    ASSERT_EQ(state.buffers.size(), 2u);
    EXPECT_EQ(state.buffers[1].name, "v");
    EXPECT_EQ(state.buffers[1].values, c.optimizer_state[1].values);
  }
}

// Each worker gets its own state; a run with more workers than the checkpoint reuses them in
// turn.
TEST_F(CheckpointTest, PerWorkerStateGoesToItsWorker) {
  Checkpoint c = sample();
  c.worker_optimizers.resize(3);
  EXPECT_EQ(optimizer_for_worker(c, 0).step, 100);
  EXPECT_EQ(optimizer_for_worker(c, 2).step, 102);
  EXPECT_EQ(optimizer_for_worker(c, 4).step, 101);
  EXPECT_EQ(optimizer_for_worker(c, 2).buffers[0].values, std::vector<float>(70, 1.0f));
}

TEST_F(CheckpointTest, InspectShowsEveryWorkersOptimizer) {
  const Checkpoint c = sample();
  const std::string text = describe("x.h5", c);
  EXPECT_NE(text.find("worker optimizers  12 workers"), std::string::npos) << text;
  EXPECT_NE(text.find("/workers/11/optimizer step 111: m v"), std::string::npos) << text;
}

TEST_F(CheckpointTest, StrayWorkerGroupIsDetected) {
  Checkpoint c = sample();
  c.worker_optimizers.resize(2);
  write_checkpoint(path("stray.h5"), c);
  {  // a third group named 5: the list has a hole
    hid_t id = H5Fopen(path("stray.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(id, 0);
    Hid handle(id, H5Fclose);
    Hid group(H5Gcreate2(id, "/workers/5", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    ASSERT_TRUE(group.valid());
  }
  try {
    read_checkpoint(path("stray.h5"));
    FAIL() << "a hole in /workers went unnoticed";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("/workers/5"), std::string::npos) << error.what();
  }
}

TEST_F(CheckpointTest, WorkerStateWithoutStepIsDetected) {
  Checkpoint c = sample();
  c.worker_optimizers.resize(2);
  write_checkpoint(path("nostep.h5"), c);
  {
    hid_t id = H5Fopen(path("nostep.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(id, 0);
    Hid handle(id, H5Fclose);
    ASSERT_GE(H5Adelete_by_name(id, "/workers/1/optimizer", "step", H5P_DEFAULT), 0);
  }
  try {
    read_checkpoint(path("nostep.h5"));
    FAIL() << "a worker state without its step was accepted";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("missing attribute 'step'"), std::string::npos)
        << error.what();
  }
}

TEST_F(CheckpointTest, MissingFileIsAUserError) {
  EXPECT_THROW(read_checkpoint(path("nope.h5")), gradshare::core::UserError);
}

TEST_F(CheckpointTest, TruncatedFileIsDetected) {
  write_checkpoint(path("c.h5"), sample());
  fs::resize_file(path("c.h5"), fs::file_size(path("c.h5")) / 2);
  EXPECT_THROW(read_checkpoint(path("c.h5")), gradshare::core::UserError);
}

// Flips one bit inside the two floats `marker` in the file's raw bytes.
void flip_bit_in(const std::string& file, const float (&marker)[2]) {
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(marker), sizeof marker));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = static_cast<char>(bytes[at + 1] ^ 0x10);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
}

void expect_corrupt(const std::string& file) {
  try {
    read_checkpoint(file);
    FAIL() << "a flipped byte went unnoticed";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

TEST_F(CheckpointTest, FlippedByteInParametersIsDetected) {
  Checkpoint c = sample();
  c.parameters.assign(4096, 0.0f);
  for (std::size_t i = 0; i < c.parameters.size(); ++i) c.parameters[i] = static_cast<float>(i);
  c.views.clear();
  c.optimizer_state.clear();
  c.worker_optimizers.clear();
  c.residuals.clear();
  write_checkpoint(path("d.h5"), c);
  flip_bit_in(path("d.h5"), {1000.0f, 1001.0f});
  expect_corrupt(path("d.h5"));
}

TEST_F(CheckpointTest, FlippedByteInAWorkersOptimizerIsDetected) {
  Checkpoint c = sample();
  c.optimizer_state.clear();
  c.residuals.clear();
  c.worker_optimizers.resize(2);
  auto& v = c.worker_optimizers[1].buffers[1].values;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 5000.0f + static_cast<float>(i);
  write_checkpoint(path("w.h5"), c);
  flip_bit_in(path("w.h5"), {5010.0f, 5011.0f});
  expect_corrupt(path("w.h5"));
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
    EXPECT_NE(std::string(error.what()).find("missing attribute"), std::string::npos)
        << error.what();
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
    EXPECT_NE(std::string(error.what()).find("format version 99"), std::string::npos)
        << error.what();
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

// Worker parts: each worker's optimizer state and residual in its own file beside the
// checkpoint, linked from /workers/<w>; read back as if they were in the checkpoint itself.
class WorkerPartsTest : public CheckpointTest {
 protected:
  // sample() with 3 workers whose states are in parts under ckpt-1234.parts/.
  Checkpoint with_parts(const std::string& main) {
    auto c = sample();
    c.worker_optimizers.resize(3);
    expected_ = c;
    expected_.optimizer_state = c.worker_optimizers.front().buffers;
    for (std::size_t w = 0; w < 3; ++w) {
      const std::string part = "ckpt-1234.parts/worker-" + std::to_string(w + 1) + ".h5";
      WorkerPart contents{c.worker_optimizers[w],
                          std::vector<float>(70, 0.001f * static_cast<float>(w + 1))};
      write_worker_part(path(part), contents);
      c.worker_parts.push_back(part);
      std::copy(contents.residual.begin(), contents.residual.end(),
                expected_.residuals.begin() + static_cast<std::ptrdiff_t>(70 * w));
    }
    c.worker_optimizers.clear();
    c.residuals.clear();
    c.optimizer_state.clear();
    write_checkpoint(path(main), c);
    return c;
  }
  Checkpoint expected_;
};

TEST_F(WorkerPartsTest, ReadBackAsIfInline) {
  with_parts("ckpt-1234.h5");
  // From another working directory: the links resolve from the checkpoint's own.
  const auto cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());
  const auto read = read_checkpoint(path("ckpt-1234.h5"));
  fs::current_path(cwd);
  ASSERT_EQ(read.worker_optimizers.size(), 3u);
  for (std::size_t w = 0; w < 3; ++w) {
    EXPECT_EQ(read.worker_optimizers[w].step, expected_.worker_optimizers[w].step);
    ASSERT_EQ(read.worker_optimizers[w].buffers.size(), 2u);
    EXPECT_EQ(read.worker_optimizers[w].buffers[1].values,
              expected_.worker_optimizers[w].buffers[1].values);
  }
  EXPECT_EQ(read.residuals, expected_.residuals);
  ASSERT_EQ(read.optimizer_state.size(), 2u);
  EXPECT_EQ(read.optimizer_state[0].values, expected_.optimizer_state[0].values);
  EXPECT_EQ(read.parameters, expected_.parameters);
  EXPECT_TRUE(read.worker_parts.empty());
}

TEST_F(WorkerPartsTest, TheRunDirectoryMovedAsAWholeStillReads) {
  with_parts("ckpt-1234.h5");
  const auto moved = dir_.string() + "-moved";
  fs::remove_all(moved);
  fs::rename(dir_, moved);
  const auto read = read_checkpoint(moved + "/ckpt-1234.h5");
  fs::rename(moved, dir_);
  EXPECT_EQ(read.residuals, expected_.residuals);
}

TEST_F(WorkerPartsTest, AMissingPartIsNamed) {
  with_parts("ckpt-1234.h5");
  fs::remove(path("ckpt-1234.parts/worker-2.h5"));
  try {
    read_checkpoint(path("ckpt-1234.h5"));
    FAIL() << "a checkpoint without one of its parts was read";
  } catch (const gradshare::core::UserError& error) {
    EXPECT_NE(
        std::string(error.what()).find("worker 1's part ckpt-1234.parts/worker-2.h5 is missing"),
        std::string::npos)
        << error.what();
  }
}

TEST_F(WorkerPartsTest, ACorruptPartIsDetected) {
  with_parts("ckpt-1234.h5");
  const auto part = path("ckpt-1234.parts/worker-3.h5");
  const auto size = fs::file_size(part);
  fs::resize_file(part, size / 2);
  EXPECT_THROW(read_checkpoint(path("ckpt-1234.h5")), gradshare::core::UserError);
}

TEST_F(WorkerPartsTest, ACheckpointHoldsStateInlineOrInPartsNotBoth) {
  auto c = sample();
  c.worker_parts = {"ckpt-1234.parts/worker-1.h5"};
  EXPECT_THROW(write_checkpoint(path("ckpt-1234.h5"), c), gradshare::core::RuntimeError);
  EXPECT_FALSE(fs::exists(path("ckpt-1234.h5")));
}
