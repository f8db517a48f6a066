#include "kernels/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "core/errors.h"

namespace gradshare::kernels::cuda {
namespace {

const std::string kLibrary = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

template <class Function>
void resolve(void* handle, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  if (function == nullptr) {
    throw core::RuntimeError(kLibrary + " has no " + name + ": install the cuBLAS of CUDA " +
                             std::to_string(CUBLAS_VER_MAJOR) + ", which this gradshare was "
                             "built with");
  }
}

CublasLibrary load() {
  // Never closed: the library serves the process until it ends.
  void* handle = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw core::RuntimeError("cannot load " + kLibrary + " (" + (reason ? reason : "unknown") +
                             "): put the CUDA toolkit's library folder (for example "
                             "/usr/local/cuda/lib64) on LD_LIBRARY_PATH or in ld.so.conf");
  }
  CublasLibrary library{};
  resolve(handle, "cublasCreate_v2", library.create);
  resolve(handle, "cublasDestroy_v2", library.destroy);
  resolve(handle, "cublasSetStream_v2", library.set_stream);
  resolve(handle, "cublasSgemm_v2", library.sgemm);
  resolve(handle, "cublasSgemmStridedBatched", library.sgemm_strided_batched);
  resolve(handle, "cublasGetStatusName", library.status_name);
  resolve(handle, "cublasGetStatusString", library.status_string);
  return library;
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace gradshare::kernels::cuda
