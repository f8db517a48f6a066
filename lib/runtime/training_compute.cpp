#include "runtime/training_compute.h"

#include <string>

#include "kernels/cuda/device.h"
#ifdef GRADSHARE_HAVE_CUDA
#include "kernels/cuda/cuda_compute.h"
#endif

namespace gradshare::runtime {

const char* resolve_compute_device(const config::ExperimentConfig& config) {
  const config::ComputeConfig& compute = config.compute;
  // A TorchScript module computes on libtorch's CPU backend (config cross-checks refuse cuda).
  if (!config.model.torchscript.empty()) return "cpu";
  if (compute.device == "cuda") return "cuda";
  if (compute.device == "auto" && kernels::cuda::gpu_available()) return "cuda";
  return "cpu";
}

std::unique_ptr<nn::Compute> make_training_compute(const config::ExperimentConfig& config) {
  if (std::string(resolve_compute_device(config)) == "cpu") return nullptr;
  kernels::cuda::require_cuda_device();
#ifdef GRADSHARE_HAVE_CUDA
  return std::make_unique<kernels::cuda::CudaCompute>();
#else
  return nullptr;  // not reached: require_cuda_device() throws in a build without CUDA
#endif
}

}  // namespace gradshare::runtime
