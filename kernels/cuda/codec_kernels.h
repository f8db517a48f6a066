// codec_kernels.h: CudaCodecKernels, the Encoder's dense passes (codec::Kernels) on the GPU.
//
// Spans in device memory (cudaMalloc) or managed memory are used in place: that is the intended
// use, with the residual and the update resident on the GPU, so only the selected indices or the
// bitmap ever leave it. Spans in ordinary host memory also work, staged through device buffers
// (copied in, the written prefix copied back), so today's Encoder, whose residual is a host
// vector, can run on these kernels and be compared with the CPU twins message for message.
// Every call waits for its work and returns the CPU twins' result, bit for bit (clip's mass to
// rounding). Calls are serialised by a mutex.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "codec/kernels.h"

namespace gradshare::kernels::cuda {

class CudaCodecKernels final : public codec::Kernels {
 public:
  // On the current device, with its own stream. Requires a GPU (see require_cuda_device()).
  CudaCodecKernels();
  ~CudaCodecKernels() override;
  CudaCodecKernels(const CudaCodecKernels&) = delete;
  CudaCodecKernels& operator=(const CudaCodecKernels&) = delete;

  const char* name() const override { return "cuda"; }
  codec::SelectResult select(std::span<const float> u, std::span<float> r, std::size_t first_index,
                             float tau, std::span<std::int32_t> out) const override;
  codec::BitmapResult bitmap(std::span<const float> u, std::span<float> r, float tau,
                             codec::HalfQuantum half,
                             std::span<std::uint8_t> bitmap) const override;
  codec::AddResult add(std::span<const float> u, std::span<float> r) const override;
  double clip(std::span<float> r, float limit) const override;

  cudaStream_t stream() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gradshare::kernels::cuda
