// cuda_check.cpp: the error reports behind GS_CUDA_CHECK and GS_CUBLAS_CHECK.
#include "kernels/cuda/cuda_check.h"

#include <string>

#include "core/errors.h"
#include "kernels/cuda/cublas_library.h"

namespace gradshare::kernels::cuda {
namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call;
}

}  // namespace

const char* cuda_hint(cudaError_t error) {
  switch (error) {
    case cudaErrorNoDevice:
      return "no GPU is visible to this process (check CUDA_VISIBLE_DEVICES and nvidia-smi)";
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
      return "no NVIDIA driver, or one older than this build's CUDA toolkit: install or update it";
    case cudaErrorMemoryAllocation:
      return "out of GPU memory: use a smaller batch or model, or a GPU no one else is using";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
      return "this build has no code for this GPU: rebuild with "
             "-DCMAKE_CUDA_ARCHITECTURES=<its compute capability, e.g. 90>";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return "a kernel accessed memory out of bounds (a gradshare bug): rerun under "
             "compute-sanitizer and report it";
    default:
      return "";
  }
}

void cuda_failed(cudaError_t error, const char* call, const char* file, int line) {
  std::string message = "CUDA error " + std::string(cudaGetErrorName(error)) + " (" +
                        cudaGetErrorString(error) + ") at " + where(call, file, line);
  if (const std::string hint = cuda_hint(error); !hint.empty()) message += "; hint: " + hint;
  throw core::RuntimeError(message);
}

void cublas_failed(cublasStatus_t status, const char* call, const char* file, int line) {
  std::string message = "cuBLAS error " + std::string(cublas().status_name(status)) + " (" +
                        cublas().status_string(status) + ") at " + where(call, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) message += "; hint: out of GPU memory";
  if (status == CUBLAS_STATUS_NOT_INITIALIZED) message += "; hint: no usable GPU or driver";
  throw core::RuntimeError(message);
}

}  // namespace gradshare::kernels::cuda
