// gpu_binding.h: which GPU a training rank computes on under compute.device: cuda, one per rank
// on a multi-GPU node.
//   local rank r   the rank's index on its node as the launcher gives it: Open MPI's
//                  OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, MPICH's MPI_LOCALRANKID
//                  (the first set, in that order); 0 when none is (one rank per node)
//   the GPUs       compute.gpus, or every GPU the process sees, 0..count-1 (CUDA_VISIBLE_DEVICES
//                  may narrow what it sees: a launcher that gives each rank one GPU that way
//                  leaves each rank GPU 0, its own)
//   the rule       rank r takes gpus[r mod len(gpus)]. While a node has a GPU per training rank
//                  each has its own: the master (rank 0, local rank 0 on its node) trains nothing
//                  and takes none, so N workers beside it on an N-GPU node take 1..N-1 and 0.
//                  With more training ranks than GPUs they share round-robin, and the job's
//                  banner names every shared GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::runtime {

using EnvironmentLookup = std::function<const char*(const char*)>;

// The launcher's local rank of this process (see above); throws core::UserError naming the
// variable when its value is not a non-negative integer.
int launcher_local_rank(const EnvironmentLookup& environment);

// The GPU of local rank `local_rank` on a node where the process sees `visible` GPUs. Throws
// core::UserError when `visible` is 0 or compute.gpus names a GPU the process does not see.
int choose_gpu(int local_rank, int visible, const std::vector<std::int64_t>& gpus);

// The banner's line for a job whose ranks `gpu_of_rank` computes on (-1: none, as the master's),
// by host: "GPUs: node1 rank 1 GPU 1, rank 2 GPU 0; node2 rank 3 GPU 0", then
// "; shared: node1 GPU 0 (ranks 2 4)" for every GPU more than one rank uses. "" when no rank
// has a GPU.
std::string describe_gpu_map(const std::vector<std::string>& host_of_rank,
                             const std::vector<int>& gpu_of_rank);

// Makes this process compute on its GPU when compute.device resolves to cuda and the rank
// trains (`trains`: not the master of a multi-rank job); returns the GPU, or -1 for the CPU.
// Throws core::UserError when there is no GPU to use (kernels::cuda::require_cuda_device's line).
int bind_training_gpu(const config::ExperimentConfig& config, bool trains,
                      const EnvironmentLookup& environment);

}  // namespace gradshare::runtime
