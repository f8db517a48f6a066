// codec_device.h: the codec's dense passes and decode-apply as CUDA launchers over device
// pointers, twins of kernels/cpu/codec_encode.h and codec_decode.h with bit-identical results
// (the clipped-mass sum excepted, as between the CPU twins). Each launcher only enqueues work on
// `stream`; results land in device memory at the start of the caller's workspace.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gradshare::kernels::cuda {

inline constexpr std::uint64_t kNoBad = ~std::uint64_t{0};

// What a select, bitmap or add pass reports (the fields of kernels/cpu's SelectResult,
// BitmapResult and AddResult): copy it back once the stream has run the pass.
struct PassResult {
  std::uint64_t processed;  // elements [0, processed) absorbed (a multiple of 8, or n)
  std::uint64_t count;      // select: indices written; bitmap: non-zero codes; add: 0
  std::uint64_t half;       // bitmap: kCodeHalf codes
  std::uint64_t bad;        // first element with a non-finite r + u, or kNoBad
};

// Workspace bytes (device memory, any contents) of a select/bitmap/add pass over n elements;
// the PassResult sits at its start.
std::size_t pass_workspace_bytes(std::size_t n);

// r += u; |r_j| >= tau -> out gets +-(first_index + j + 1) in increasing j, r_j -= copysign(tau,
// r_j); stops before a chunk of 8 that might overflow out[0, capacity) or holds a non-finite value.
void enqueue_select(const float* u, float* r, std::size_t n, std::size_t first_index, float tau,
                    std::int32_t* out, std::size_t capacity, void* workspace, cudaStream_t stream);

// r += u, then 2-bit codes (kernels/cpu/codec_bitmap_layout.h) with optional half quanta
// (half_threshold = +inf: none); writes bitmap bytes [0, bitmap_bytes(processed)).
void enqueue_bitmap(const float* u, float* r, std::size_t n, float tau, float half_threshold,
                    float half_value, std::uint8_t* bitmap, void* workspace, cudaStream_t stream);

// r += u, stopping before a chunk with a non-finite r + u.
void enqueue_add(const float* u, float* r, std::size_t n, void* workspace, cudaStream_t stream);

// Workspace bytes of clip; the clipped mass (a double) sits at its start.
std::size_t clip_workspace_bytes(std::size_t n);
// Clamps r to [-limit, limit]; the mass sum max(|r_j| - limit, 0) is summed in a fixed order
// (deterministic for a given n, but not the CPU twins' order).
void enqueue_clip(float* r, std::size_t n, float limit, void* workspace, cudaStream_t stream);

// target[|v| - 1] += (v > 0 ? plus : minus) for `count` validated sparse entries (distinct
// indices: no two threads touch one element).
void enqueue_apply_sparse(const std::int32_t* entries, std::size_t count, float* target, float plus,
                          float minus, cudaStream_t stream);

// target[index] += sign * value for `count` validated exact records (uint32 index, float32
// value; distinct indices).
void enqueue_apply_exact(const std::uint32_t* records, std::size_t count, float* target,
                         float sign, cudaStream_t stream);

// target[j] += values[code_j] for every non-zero code of a validated bitmap over n parameters.
struct BitmapValues {
  float plus, minus, half;  // values of codes 1, 2 and 3
};
void enqueue_apply_bitmap(const std::uint8_t* bitmap, std::size_t n, float* target,
                          BitmapValues values, cudaStream_t stream);

}  // namespace gradshare::kernels::cuda
