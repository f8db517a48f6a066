// codec_decode_apply.cu: decode-apply of validated sparse, bitmap and exact payloads on the GPU,
// the twins of kernels/cpu's apply_sparse and apply_bitmap and codec's apply_exact. Every parameter receives at most one
// value (sparse indices are distinct once validated; a bitmap has one code per parameter), so
// no atomics are needed and each element sees the CPU's single addition.
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace gradshare::kernels::cuda {
namespace {

constexpr int kBytesPerThread = 4;  // 16 parameters

__global__ void __launch_bounds__(kBlockThreads)
    sparse_kernel(const std::int32_t* __restrict__ entries, std::size_t count,
                  float* __restrict__ target, float plus, float minus) {
  const std::size_t i = global_index();
  if (i >= count) return;
  const std::int32_t v = entries[i];
  if (v > 0) {
    target[v - 1] += plus;
  } else {
    target[-static_cast<std::int64_t>(v) - 1] += minus;
  }
}

// An exact record: uint32 index, float32 value (codec/exact.h), read bytewise-safe as words.
__global__ void __launch_bounds__(kBlockThreads)
    exact_kernel(const std::uint32_t* __restrict__ records, std::size_t count,
                 float* __restrict__ target, float sign) {
  const std::size_t e = global_index();
  if (e >= count) return;
  target[records[2 * e]] += sign * __uint_as_float(records[2 * e + 1]);
}

__device__ inline float value_of(unsigned code, const BitmapValues& values) {
  return code == 1u ? values.plus : code == 2u ? values.minus : values.half;
}

// One bitmap byte: four parameters from `first`.
template <bool kVector>
__device__ inline void apply_byte(unsigned byte, std::size_t first, std::size_t n,
                                  float* __restrict__ target, const BitmapValues& values) {
  if (byte == 0) return;
  if (kVector && first + 4 <= n) {
    float4* t4 = reinterpret_cast<float4*>(target + first);
    float4 t = *t4;
    float* lanes[4] = {&t.x, &t.y, &t.z, &t.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const unsigned code = (byte >> (2 * q)) & 3u;
      if (code != 0) *lanes[q] += value_of(code, values);
    }
    *t4 = t;
    return;
  }
  for (int q = 0; q < 4; ++q) {
    const unsigned code = (byte >> (2 * q)) & 3u;
    if (code != 0) target[first + q] += value_of(code, values);
  }
}

template <bool kVector>
__global__ void __launch_bounds__(kBlockThreads)
    bitmap_kernel(const std::uint8_t* __restrict__ bitmap, std::size_t n,
                  float* __restrict__ target, BitmapValues values) {
  const std::size_t bytes = (n + 3) / 4;
  const std::size_t first_byte = global_index() * kBytesPerThread;
  if (first_byte >= bytes) return;
  unsigned word = 0;
  if (kVector && first_byte + kBytesPerThread <= bytes) {
    word = *reinterpret_cast<const unsigned*>(bitmap + first_byte);
  } else {
    for (std::size_t b = first_byte; b < bytes && b < first_byte + kBytesPerThread; ++b) {
      word |= static_cast<unsigned>(bitmap[b]) << (8 * (b - first_byte));
    }
  }
  if (word == 0) return;
#pragma unroll
  for (int b = 0; b < kBytesPerThread; ++b) {
    apply_byte<kVector>((word >> (8 * b)) & 0xFFu, 4 * (first_byte + b), n, target, values);
  }
}

}  // namespace

void enqueue_apply_sparse(const std::int32_t* entries, std::size_t count, float* target, float plus,
                          float minus, cudaStream_t stream) {
  if (count == 0) return;
  sparse_kernel<<<grid_for(count), kBlockThreads, 0, stream>>>(entries, count, target, plus, minus);
  GS_CUDA_CHECK_LAUNCH();
}

void enqueue_apply_exact(const std::uint32_t* records, std::size_t count, float* target,
                         float sign, cudaStream_t stream) {
  if (count == 0) return;
  exact_kernel<<<grid_for(count), kBlockThreads, 0, stream>>>(records, count, target, sign);
  GS_CUDA_CHECK_LAUNCH();
}

void enqueue_apply_bitmap(const std::uint8_t* bitmap, std::size_t n, float* target,
                          BitmapValues values, cudaStream_t stream) {
  const std::size_t bytes = (n + 3) / 4;
  if (bytes == 0) return;
  const unsigned blocks = grid_for((bytes + kBytesPerThread - 1) / kBytesPerThread);
  // Word loads of the bitmap and float4 loads of the target need both aligned.
  if (((reinterpret_cast<std::uintptr_t>(bitmap) & 3u) |
       (reinterpret_cast<std::uintptr_t>(target) & 15u)) == 0) {
    bitmap_kernel<true><<<blocks, kBlockThreads, 0, stream>>>(bitmap, n, target, values);
  } else {
    bitmap_kernel<false><<<blocks, kBlockThreads, 0, stream>>>(bitmap, n, target, values);
  }
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda
