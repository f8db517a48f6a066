// gemm_cublas.cpp: row-major sgemm through cuBLAS, which is column-major. A row-major matrix is
// the column-major storage of its transpose, so row-major C = op(A) op(B) is computed as
// column-major C^T = op(B)^T op(A)^T: the operands swap places and m and n swap, the transpose
// flags and leading dimensions stay. FP32 throughout (the handle's default math mode; no TF32).
#include "kernels/cuda/cublas_library.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {

void gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k,
          float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc) {
  if (m == 0 || n == 0) return;
  GS_CUBLAS_CHECK(cublas().sgemm(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb,
                                 a, lda, &beta, c, ldc));
}

void gemm_batch(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k,
                float alpha, const float* a, int lda, std::size_t stride_a, const float* b,
                int ldb, std::size_t stride_b, float beta, float* c, int ldc,
                std::size_t stride_c, std::size_t count) {
  if (m == 0 || n == 0 || count == 0) return;
  GS_CUBLAS_CHECK(cublas().sgemm_strided_batched(
      handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n,
      m, k, &alpha, b, ldb, static_cast<long long>(stride_b), a, lda,
      static_cast<long long>(stride_a), &beta, c, ldc, static_cast<long long>(stride_c),
      static_cast<int>(count)));
}

}  // namespace gradshare::kernels::cuda
