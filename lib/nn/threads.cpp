// threads.cpp: OpenBLAS thread count with a default of one.
#include "nn/threads.h"

#include <atomic>

#include "kernels/cpu/gemm.h"

namespace gradshare::nn {
namespace {
std::atomic<bool> configured{false};
}  // namespace

void set_compute_threads(int threads) {
  kernels::cpu::set_blas_threads(threads);
  configured = true;
}

int compute_threads() { return kernels::cpu::blas_threads(); }

void ensure_default_compute_threads() {
  if (!configured.exchange(true)) kernels::cpu::set_blas_threads(1);
}

}  // namespace gradshare::nn
