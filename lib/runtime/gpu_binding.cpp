// gpu_binding.cpp: launcher_local_rank, choose_gpu, describe_gpu_map, bind_training_gpu.
#include "runtime/gpu_binding.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/errors.h"
#include "kernels/cuda/device.h"
#include "runtime/training_compute.h"

namespace gradshare::runtime {

int launcher_local_rank(const EnvironmentLookup& environment) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    const char* value = environment(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string text(value);
    int rank = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error != std::errc{} || end != text.data() + text.size() || rank < 0)
      throw core::UserError(std::string(name) + "=" + text +
                            " is not a local rank (a non-negative integer): check the launcher");
    return rank;
  }
  return 0;
}

int choose_gpu(int local_rank, int visible, const std::vector<std::int64_t>& gpus) {
  if (visible <= 0)
    throw core::UserError("compute.device is cuda but this rank sees no GPU (check "
                          "CUDA_VISIBLE_DEVICES and the job's GPU request)");
  for (const auto gpu : gpus)
    if (gpu >= visible)
      throw core::UserError("compute.gpus lists GPU " + std::to_string(gpu) + ", but this rank "
                            "sees " + std::to_string(visible) + " (0-" +
                            std::to_string(visible - 1) + "): list GPUs that exist on every node");
  const auto offered = gpus.empty() ? static_cast<std::size_t>(visible) : gpus.size();
  const auto index = static_cast<std::size_t>(local_rank) % offered;
  return gpus.empty() ? static_cast<int>(index) : static_cast<int>(gpus[index]);
}

std::string describe_gpu_map(const std::vector<std::string>& host_of_rank,
                             const std::vector<int>& gpu_of_rank) {
  std::vector<std::string> hosts;                          // in order of their lowest rank
  std::map<std::string, std::string> ranks_of_host;        // "rank 1 GPU 1, rank 2 GPU 0"
  std::map<std::pair<std::string, int>, std::vector<std::size_t>> users;  // (host, GPU) -> ranks
  for (std::size_t rank = 0; rank < gpu_of_rank.size() && rank < host_of_rank.size(); ++rank) {
    const int gpu = gpu_of_rank[rank];
    if (gpu < 0) continue;
    const auto& host = host_of_rank[rank];
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    auto& line = ranks_of_host[host];
    line += (line.empty() ? "rank " : ", rank ") + std::to_string(rank) + " GPU " +
            std::to_string(gpu);
    users[{host, gpu}].push_back(rank);
  }
  if (hosts.empty()) return "";
  std::string text = "GPUs:";
  for (std::size_t i = 0; i < hosts.size(); ++i)
    text += (i == 0 ? " " : "; ") + hosts[i] + " " + ranks_of_host[hosts[i]];
  std::string shared;
  for (const auto& host : hosts)
    for (const auto& [key, ranks] : users) {
      if (key.first != host || ranks.size() < 2) continue;
      shared += (shared.empty() ? "" : ", ") + host + " GPU " + std::to_string(key.second) +
                " (ranks";
      for (const auto rank : ranks) shared += " " + std::to_string(rank);
      shared += ")";
    }
  if (!shared.empty()) text += "; shared: " + shared;
  return text;
}

int bind_training_gpu(const config::ExperimentConfig& config, bool trains,
                      const EnvironmentLookup& environment) {
  if (!trains) return -1;
  if (config.compute.device == "cuda") kernels::cuda::require_cuda_device();
  if (std::string(resolve_compute_device(config)) != "cuda") return -1;
  const int gpu = choose_gpu(launcher_local_rank(environment), kernels::cuda::device_count(),
                             config.compute.gpus);
  kernels::cuda::use_device(gpu);
  return gpu;
}

}  // namespace gradshare::runtime
