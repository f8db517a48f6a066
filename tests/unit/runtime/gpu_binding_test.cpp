// gpu_binding_test.cpp: which GPU each training rank takes (runtime/gpu_binding.h), without a GPU:
// the launcher's local rank, the round-robin rule over compute.gpus or the visible GPUs, the
// banner's map and its shared GPUs, and the CPU path of bind_training_gpu.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/errors.h"
#include "runtime/gpu_binding.h"

namespace gradshare::runtime {
namespace {

EnvironmentLookup environment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

TEST(GpuBinding, LocalRankComesFromTheLauncherInItsOrderOfPrecedence) {
  EXPECT_EQ(launcher_local_rank(environment({})), 0);
  EXPECT_EQ(launcher_local_rank(environment({{"SLURM_LOCALID", "3"}})), 3);
  EXPECT_EQ(launcher_local_rank(environment({{"MPI_LOCALRANKID", "2"}})), 2);
  // Open MPI's own variable wins over Slurm's (mpirun inside an allocation sets both).
  EXPECT_EQ(launcher_local_rank(
                environment({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_LOCALID", "0"}})),
            1);
  EXPECT_EQ(launcher_local_rank(environment({{"OMPI_COMM_WORLD_LOCAL_RANK", ""},
                                             {"SLURM_LOCALID", "5"}})),
            5);
  for (const char* bad : {"-1", "x", "2x", " 1"})
    EXPECT_THROW(launcher_local_rank(environment({{"SLURM_LOCALID", bad}})), core::UserError)
        << bad;
}

TEST(GpuBinding, EachTrainingRankOfANodeWithAGpuPerRankHasItsOwn) {
  // Master (local rank 0) and 4 workers on a 4-GPU node: the workers take 1, 2, 3, 0.
  EXPECT_EQ(choose_gpu(1, 4, {}), 1);
  EXPECT_EQ(choose_gpu(2, 4, {}), 2);
  EXPECT_EQ(choose_gpu(3, 4, {}), 3);
  EXPECT_EQ(choose_gpu(4, 4, {}), 0);
  // A node of workers only: local ranks 0..3 take 0..3.
  EXPECT_EQ(choose_gpu(0, 4, {}), 0);
  // CUDA_VISIBLE_DEVICES narrowed to one GPU per rank by the launcher: each takes "its" 0.
  EXPECT_EQ(choose_gpu(3, 1, {}), 0);
}

TEST(GpuBinding, ComputeGpusRestrictsTheNodesGpusAndRanksBeyondThemShareRoundRobin) {
  const std::vector<std::int64_t> gpus{2, 3};
  EXPECT_EQ(choose_gpu(0, 4, gpus), 2);
  EXPECT_EQ(choose_gpu(1, 4, gpus), 3);
  EXPECT_EQ(choose_gpu(2, 4, gpus), 2);
  EXPECT_EQ(choose_gpu(5, 4, gpus), 3);
  EXPECT_EQ(choose_gpu(5, 2, {}), 1);
}

TEST(GpuBinding, AGpuTheRankDoesNotSeeIsOneClearError) {
  try {
    choose_gpu(1, 2, {0, 4});
    FAIL() << "compute.gpus [0, 4] on a 2-GPU node was taken";
  } catch (const core::UserError& error) {
    EXPECT_NE(std::string(error.what()).find("compute.gpus lists GPU 4"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("sees 2 (0-1)"), std::string::npos) << error.what();
  }
  EXPECT_THROW(choose_gpu(0, 0, {}), core::UserError);
}

TEST(GpuBinding, TheMapListsEachHostsRanksAndNamesSharedGpus) {
  const std::vector<std::string> hosts{"node1", "node1", "node1", "node2", "node2", "node1"};
  // The master computes nowhere; node1's three workers share 2 GPUs.
  const std::vector<int> gpus{-1, 1, 0, 0, 1, 1};
  EXPECT_EQ(describe_gpu_map(hosts, gpus),
            "GPUs: node1 rank 1 GPU 1, rank 2 GPU 0, rank 5 GPU 1; node2 rank 3 GPU 0, rank 4 "
            "GPU 1; shared: node1 GPU 1 (ranks 1 5)");
  EXPECT_EQ(describe_gpu_map({"node1", "node2", "node3"}, {-1, 0, 0}),
            "GPUs: node2 rank 1 GPU 0; node3 rank 2 GPU 0");
  EXPECT_EQ(describe_gpu_map({"node1", "node1"}, {-1, -1}), "");
}

TEST(GpuBinding, TheCpuAndTheMasterTakeNoGpu) {
  config::ExperimentConfig config;
  config.compute.device = "cpu";
  EXPECT_EQ(bind_training_gpu(config, /*trains=*/true, environment({})), -1);
  config.compute.device = "cuda";
  EXPECT_EQ(bind_training_gpu(config, /*trains=*/false, environment({})), -1);
}

}  // namespace
}  // namespace gradshare::runtime
