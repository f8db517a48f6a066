// cublas_library.h: the cuBLAS functions gradshare calls, loaded with dlopen when a CudaCompute
// is first made instead of linked. Linked, libcublas brings cuBLASLt (540 MB) whose loading costs
// every process about 217 MB of resident memory at start, GPU or not: an empty program linked
// with -lcublas peaked at 218 MB against 1 MB, and with gradshare linked to it every rank of
// train_partitioned_reading went over that test's 200 MB bound.
#pragma once

#include <cublas_api.h>

namespace gradshare::kernels::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// libcublas.so.<the major version built against>, loaded once and kept; throws
// core::RuntimeError naming the library, the loader's reason and the fix.
const CublasLibrary& cublas();

}  // namespace gradshare::kernels::cuda
