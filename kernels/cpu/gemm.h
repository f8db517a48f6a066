// gemm.h: row-major single-precision matrix multiply through OpenBLAS (cblas_sgemm), and the
// BLAS thread count. Every dense and convolution layer funnels its arithmetic through here.
#pragma once

namespace gradshare::kernels::cpu {

// C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or X^T.
// lda/ldb/ldc are the row strides of A, B, C as stored (before any transpose).
void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);

// OpenBLAS worker threads for this process (1 keeps several ranks per node from
// oversubscribing cores).
void set_blas_threads(int threads);
int blas_threads();

}  // namespace gradshare::kernels::cpu
