// gemm.cpp: cblas_sgemm wrapper and OpenBLAS thread control.
#include "kernels/cpu/gemm.h"

#include <cblas.h>

namespace gradshare::kernels::cpu {

void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace gradshare::kernels::cpu
