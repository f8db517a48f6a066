// training_compute.h: the backend a replica's forward and backward passes run on, from
// compute.device:
//   cpu   none: the model keeps the CPU backend
//   cuda  a CudaCompute of the replica's own (one per replica: a backend is not thread-safe);
//         without a GPU or a CUDA build, the UserError of kernels::cuda::require_cuda_device()
//   auto  cuda where a GPU is visible and this build has CUDA, else cpu
// On the GPU the model uploads its parameters and each minibatch and downloads the gradient
// every step (nn::Model::compute_on); the optimizer, the codec and everything the strategies
// exchange stay in host memory.
#pragma once

#include <memory>

#include "config/experiment_config.h"
#include "nn/compute.h"

namespace gradshare::runtime {

// Null for the CPU.
std::unique_ptr<nn::Compute> make_training_compute(const config::ExperimentConfig& config);

// "cpu" or "cuda": what compute.device resolves to in this process.
const char* resolve_compute_device(const config::ExperimentConfig& config);

}  // namespace gradshare::runtime
