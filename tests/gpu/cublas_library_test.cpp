// cublas_library_test.cpp: cuBLAS is loaded at run time (kernels/cuda/cublas_library.h), so a
// missing or renamed function would only show on a GPU machine: this loads the library and
// resolves every function without a GPU (label unit, CUDA builds only), and checks one call that
// needs no device.
#include "kernels/cuda/cublas_library.h"

#include <gtest/gtest.h>

#include <string>

namespace gradshare::kernels::cuda {
namespace {

TEST(CublasLibrary, LoadsAndResolvesEveryFunction) {
  const CublasLibrary& library = cublas();
  EXPECT_NE(library.create, nullptr);
  EXPECT_NE(library.destroy, nullptr);
  EXPECT_NE(library.set_stream, nullptr);
  EXPECT_NE(library.sgemm, nullptr);
  EXPECT_NE(library.sgemm_strided_batched, nullptr);
  EXPECT_EQ(std::string(library.status_name(CUBLAS_STATUS_NOT_INITIALIZED)),
            "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_FALSE(std::string(library.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).empty());
  EXPECT_EQ(&cublas(), &library);  // loaded once
}

}  // namespace
}  // namespace gradshare::kernels::cuda
