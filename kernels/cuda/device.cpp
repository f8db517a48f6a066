// device.cpp: GPU detection and description (see device.h).
#include "kernels/cuda/device.h"

#include <cstdio>
#include <string>

#include "core/errors.h"

#if defined(GRADSHARE_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace gradshare::kernels::cuda {
namespace {

#if defined(GRADSHARE_HAVE_CUDA)
// "" when at least one device is visible, else why not.
std::string device_count_problem() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // not a sticky error: clear it so later calls start clean
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(error) + ", " +
           cudaGetErrorString(error);
  }
  if (count == 0) return "cudaGetDeviceCount: 0 devices";
  return "";
}

std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
#endif

}  // namespace

bool gpu_available() {
#if defined(GRADSHARE_HAVE_CUDA)
  return device_count_problem().empty();
#else
  return false;
#endif
}

int device_count() {
#if defined(GRADSHARE_HAVE_CUDA)
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

void use_device(int index) {
#if defined(GRADSHARE_HAVE_CUDA)
  const cudaError_t error = cudaSetDevice(index);
  if (error != cudaSuccess) {
    cudaGetLastError();
    throw core::UserError("cannot use GPU " + std::to_string(index) + " (cudaSetDevice: " +
                          cudaGetErrorName(error) + ", " + cudaGetErrorString(error) +
                          "): check compute.gpus and CUDA_VISIBLE_DEVICES");
  }
#else
  throw core::UserError("GPU " + std::to_string(index) +
                        " asked for, but this gradshare was built without CUDA");
#endif
}

std::string describe_device() {
#if defined(GRADSHARE_HAVE_CUDA)
  if (const std::string problem = device_count_problem(); !problem.empty()) {
    return "no GPU (" + problem + ")";
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "a GPU whose properties cannot be read";
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
         memory + ", driver " + version_string(driver) + ", runtime " + version_string(runtime) +
         ")";
#else
  return "this gradshare was built without CUDA";
#endif
}

void require_cuda_device() {
#if defined(GRADSHARE_HAVE_CUDA)
  if (const std::string problem = device_count_problem(); !problem.empty()) {
    throw core::UserError("compute.device is cuda but no GPU is visible (" + problem + ")");
  }
#else
  throw core::UserError(
      "compute.device is cuda but this gradshare was built without CUDA (rebuild with "
      "-DGRADSHARE_CUDA=ON on a machine with the CUDA toolkit, or set compute.device: cpu)");
#endif
}

}  // namespace gradshare::kernels::cuda
