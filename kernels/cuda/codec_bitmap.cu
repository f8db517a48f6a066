// codec_bitmap.cu: the bitmap encode with the residual update on the GPU, the twin of
// kernels/cpu's encode_bitmap: r += u, then a 2-bit code per element (+tau, -tau, the shake-up
// half quantum, nothing; layout in kernels/cpu/codec_bitmap_layout.h). Each chunk of 8 owns two
// bitmap bytes, so only the early stop on a non-finite value needs the look-back of
// codec_pass.cuh; it also counts the entries.
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cuda/codec_pass.cuh"

namespace gradshare::kernels::cuda {
namespace {

namespace cpu = kernels::cpu;

struct BitmapPolicy {
  float tau;
  float half_threshold;
  float half_value;
  std::uint8_t* bitmap;
  unsigned long long capacity = ~0ull;

  __device__ pass::Codes classify(const float (&v)[pass::kChunk], unsigned valid) const {
    const bool half_negative = signbit(half_value);
    pass::Codes codes;
#pragma unroll
    for (int j = 0; j < pass::kChunk; ++j) {
      const float a = fabsf(v[j]);
      const bool fire = a >= tau;
      const bool half = !fire && a >= half_threshold && signbit(v[j]) == half_negative;
      codes.fire |= (fire ? 1u : 0u) << j;
      codes.half |= (half ? 1u : 0u) << j;
      codes.negative |= (signbit(v[j]) ? 1u : 0u) << j;
    }
    codes.fire &= valid;
    codes.half &= valid;
    return codes;
  }
  __device__ unsigned count(const pass::Codes& codes) const {
    return __popc(codes.fire | codes.half);
  }
  __device__ void update(float (&v)[pass::kChunk], const pass::Codes& codes) const {
#pragma unroll
    for (int j = 0; j < pass::kChunk; ++j) {
      if ((codes.fire >> j) & 1u) {
        v[j] -= copysignf(tau, v[j]);
      } else if ((codes.half >> j) & 1u) {
        v[j] -= half_value;
      }
    }
  }
  __device__ void emit(std::size_t chunk, unsigned long long /*position*/, const pass::Codes& codes,
                       int len) const {
    unsigned packed = 0;
#pragma unroll
    for (int j = 0; j < pass::kChunk; ++j) {
      unsigned code = cpu::kCodeNone;
      if ((codes.fire >> j) & 1u) {
        code = ((codes.negative >> j) & 1u) ? cpu::kCodeMinus : cpu::kCodePlus;
      } else if ((codes.half >> j) & 1u) {
        code = cpu::kCodeHalf;
      }
      packed |= code << (2 * j);
    }
    std::uint8_t* out = bitmap + 2 * chunk;
    out[0] = static_cast<std::uint8_t>(packed);
    if (len > 4) out[1] = static_cast<std::uint8_t>(packed >> 8);
  }
};

}  // namespace

void enqueue_bitmap(const float* u, float* r, std::size_t n, float tau, float half_threshold,
                    float half_value, std::uint8_t* bitmap, void* workspace, cudaStream_t stream) {
  pass::run(BitmapPolicy{tau, half_threshold, half_value, bitmap}, u, r, n, workspace, stream);
}

}  // namespace gradshare::kernels::cuda
