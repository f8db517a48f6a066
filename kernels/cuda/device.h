// device.h: whether this process can use a GPU, and what it is. Built with or without CUDA
// (GRADSHARE_HAVE_CUDA), so the launcher can always ask; never crashes without a driver.
#pragma once

#include <string>

namespace gradshare::kernels::cuda {

// True when this build has CUDA and cudaGetDeviceCount reports at least one device.
bool gpu_available();

// The GPUs this process sees (0 without CUDA or a driver).
int device_count();

// Makes GPU `index` (0 <= index < device_count()) this process's current device: what every
// CUDA call of this thread and of threads started later uses (cudaSetDevice). Throws
// core::UserError naming the index and CUDA's reason when it cannot.
void use_device(int index);

// One line: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, driver 13.0, runtime 13.0)" for
// the current device, else why there is none ("no GPU: cudaGetDeviceCount: ...", "this gradshare
// was built without CUDA").
std::string describe_device();

// For compute.device: cuda. Throws core::UserError "compute.device is cuda but no GPU is visible
// (cudaGetDeviceCount: <reason>)" or "compute.device is cuda but this gradshare was built without
// CUDA (...)".
void require_cuda_device();

}  // namespace gradshare::kernels::cuda
