// cuda_check.h: GS_CUDA_CHECK(call) and GS_CUBLAS_CHECK(call). A failed CUDA runtime or cuBLAS
// call throws core::RuntimeError naming the call, the file and line, the library's own message
// and, for the failures a user can act on (no GPU, old driver, out of memory, a build for
// another GPU), a hint. GS_CUDA_CHECK_LAUNCH() checks the last kernel launch.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace gradshare::kernels::cuda {

[[noreturn]] void cuda_failed(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void cublas_failed(cublasStatus_t status, const char* call, const char* file,
                                int line);
// What the user can do about `error`, or "" when there is nothing to add.
const char* cuda_hint(cudaError_t error);

}  // namespace gradshare::kernels::cuda

#define GS_CUDA_CHECK(call)                                                               \
  do {                                                                                    \
    const cudaError_t gs_cuda_error_ = (call);                                            \
    if (gs_cuda_error_ != cudaSuccess)                                                    \
      ::gradshare::kernels::cuda::cuda_failed(gs_cuda_error_, #call, __FILE__, __LINE__); \
  } while (0)

#define GS_CUDA_CHECK_LAUNCH() GS_CUDA_CHECK(cudaGetLastError())

#define GS_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                         \
    const cublasStatus_t gs_cublas_status_ = (call);                                           \
    if (gs_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                            \
      ::gradshare::kernels::cuda::cublas_failed(gs_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
