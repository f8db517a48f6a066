#include "kernels/cuda/stream.h"

#include "kernels/cuda/cuda_check.h"

namespace gradshare::kernels::cuda {

cudaStream_t create_stream() {
  cudaStream_t stream = nullptr;
  GS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  return stream;
}

}  // namespace gradshare::kernels::cuda
