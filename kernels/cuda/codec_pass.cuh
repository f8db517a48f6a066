// codec_pass.cuh: the one-pass skeleton of the select, bitmap and add kernels.
//
// The CPU twins walk r + u in chunks of 8 and stop before the first chunk that holds a
// non-finite value or (select) might overflow the index buffer; a chunk's output position is
// the number of entries of all chunks before it. Here every thread block takes a tile of
// kTileChunks chunks, numbered in the order blocks start (an atomic counter, so a block only
// ever waits for blocks that are already running), and learns the entry count and the
// "non-finite seen" flag of all earlier tiles by decoupled look-back (Merrill & Garland, "Single-
// pass Parallel Prefix Scan with Decoupled Look-back", 2016). So u and r are read once and r is
// written once, and the index order is the CPU's whatever the schedule.
//
// Stopping: a full chunk c fails the capacity test when pos(c) + 8 > capacity; pos is
// non-decreasing, so once one chunk fails every later one does, and "some chunk <= c stopped"
// is "c fails capacity, or a non-finite chunk lies at or before c". Stopped chunks leave r
// untouched; the first one records (chunk, reason, pos) through an atomic minimum, and a one-
// thread finish kernel turns that into the PassResult and does the last partial chunk (< 8
// elements) exactly like the CPU tail.
//
// A Policy supplies classify (which lanes fire), count (entries of a chunk), update (the
// residual change) and emit (write the entries at a position), plus capacity.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/errors.h"
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/cuda_check.h"

namespace gradshare::kernels::cuda::pass {

constexpr int kChunk = 8;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRounds = 4;  // chunks per thread; kRounds * kWarps == 32 (one warp scans them)
constexpr std::size_t kTileChunks = std::size_t{kThreads} * kRounds;
static_assert(kRounds * kWarps == 32);

// Device-side state at the start of the workspace, zeroed before every pass.
struct State {
  PassResult result;                // written last, by finish_kernel
  unsigned long long stop_key_inv;  // ~key of the first stopped chunk; 0: none stopped
  unsigned long long total;         // entries of all full chunks (written by the last tile)
  unsigned long long half;          // half codes of the processed full chunks
  unsigned int next_tile;
};
constexpr std::size_t kStatusOffset = (sizeof(State) + 127) / 128 * 128;

// A tile's published word: kind in bits 62..63, non-finite flag in bit 32, count in bits 0..31.
constexpr unsigned long long kAggregate = 1ull << 62;
constexpr unsigned long long kPrefix = 2ull << 62;
constexpr unsigned long long kKindMask = 3ull << 62;
constexpr unsigned long long kFlag = 1ull << 32;
constexpr unsigned long long kCountMask = 0xFFFFFFFFull;
constexpr unsigned kNone = 0xFFFFFFFFu;

__host__ __device__ inline std::size_t tiles(std::size_t chunks) {
  return (chunks + kTileChunks - 1) / kTileChunks;
}

inline std::size_t workspace_bytes(std::size_t n) {
  return kStatusOffset + sizeof(unsigned long long) * tiles(n / kChunk);
}

// Which lanes of a chunk carry a full quantum, a half quantum, a negative value.
struct Codes {
  unsigned fire = 0;
  unsigned half = 0;
  unsigned negative = 0;
};

__device__ inline unsigned long long combine(unsigned long long a, unsigned long long b) {
  return ((a + b) & kCountMask) | ((a | b) & kFlag);
}

__device__ inline unsigned warp_inclusive_sum(unsigned x, int lane) {
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned y = __shfl_up_sync(0xFFFFFFFFu, x, offset);
    if (lane >= offset) x += y;
  }
  return x;
}

// Run by one whole warp: publishes this tile's aggregate, combines the words of the earlier
// tiles back to the nearest published prefix, publishes the inclusive prefix and returns the
// exclusive one (to every lane).
__device__ inline unsigned long long look_back(unsigned long long* status, std::size_t tile,
                                               unsigned long long aggregate, int lane) {
  if (tile == 0) {
    if (lane == 0) atomicExch(&status[0], kPrefix | aggregate);
    return 0;
  }
  if (lane == 0) atomicExch(&status[tile], kAggregate | aggregate);
  unsigned long long exclusive = 0;
  long long nearest = static_cast<long long>(tile) - 1;  // the tile lane 0 reads
  while (true) {
    const long long index = nearest - lane;
    unsigned long long word;
    unsigned spins = 0;
    while (true) {
      // Tile 0 always publishes a prefix, so lanes past it are never needed: read them as 0.
      word = index >= 0 ? __ldcv(&status[index]) : kPrefix;
      if (__all_sync(0xFFFFFFFFu, (word & kKindMask) != 0)) break;
      if (++spins > 4) __nanosleep(64);
    }
    const unsigned prefixes = __ballot_sync(0xFFFFFFFFu, (word & kKindMask) == kPrefix);
    const int last = prefixes != 0 ? __ffs(static_cast<int>(prefixes)) - 1 : 31;
    unsigned long long mine = lane <= last ? (word & ~kKindMask) : 0;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      mine = combine(mine, __shfl_xor_sync(0xFFFFFFFFu, mine, offset));
    }
    exclusive = combine(exclusive, mine);
    if (prefixes != 0) break;
    nearest -= 32;
  }
  if (lane == 0) atomicExch(&status[tile], kPrefix | combine(exclusive, aggregate));
  return exclusive;
}

// Index of the first lane whose value is NaN or infinite, or kChunk.
__device__ inline unsigned first_nonfinite(const float (&v)[kChunk], unsigned valid) {
  unsigned bad = 0;
#pragma unroll
  for (int j = 0; j < kChunk; ++j) bad |= (!isfinite(v[j]) ? 1u : 0u) << j;
  bad &= valid;
  return bad != 0 ? static_cast<unsigned>(__ffs(static_cast<int>(bad)) - 1) : kChunk;
}

template <bool kVector>
__device__ inline void load_sum(const float* __restrict__ u, const float* __restrict__ r,
                                std::size_t chunk, float (&v)[kChunk]) {
  if constexpr (kVector) {
    const float4* u4 = reinterpret_cast<const float4*>(u) + 2 * chunk;
    const float4* r4 = reinterpret_cast<const float4*>(r) + 2 * chunk;
    const float4 u0 = __ldcs(u4), u1 = __ldcs(u4 + 1), r0 = r4[0], r1 = r4[1];
    v[0] = r0.x + u0.x, v[1] = r0.y + u0.y, v[2] = r0.z + u0.z, v[3] = r0.w + u0.w;
    v[4] = r1.x + u1.x, v[5] = r1.y + u1.y, v[6] = r1.z + u1.z, v[7] = r1.w + u1.w;
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = r[chunk * kChunk + j] + u[chunk * kChunk + j];
  }
}

template <bool kVector>
__device__ inline void store(float* __restrict__ r, std::size_t chunk, const float (&v)[kChunk]) {
  if constexpr (kVector) {
    float4* r4 = reinterpret_cast<float4*>(r) + 2 * chunk;
    r4[0] = make_float4(v[0], v[1], v[2], v[3]);
    r4[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) r[chunk * kChunk + j] = v[j];
  }
}

template <class Policy, bool kVector>
__global__ void __launch_bounds__(kThreads)
    chunk_kernel(Policy policy, const float* __restrict__ u, float* __restrict__ r,
                 std::size_t chunks, State* state, unsigned long long* status) {
  __shared__ unsigned s_tile;
  __shared__ unsigned s_first_bad;                 // first tile-local chunk with a non-finite value
  __shared__ unsigned s_offset[kRounds * kWarps];  // entries before each (round, warp)
  __shared__ unsigned long long s_prefix;          // count and flag of all earlier tiles
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  if (threadIdx.x == 0) {
    s_tile = atomicAdd(&state->next_tile, 1u);
    s_first_bad = kNone;
  }
  __syncthreads();
  const std::size_t tile = s_tile;
  const std::size_t base = tile * kTileChunks;

  float v[kRounds][kChunk];
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    const std::size_t c = base + static_cast<std::size_t>(k) * kThreads + threadIdx.x;
    if (c < chunks) load_sum<kVector>(u, r, c, v[k]);
  }
  Codes codes[kRounds];
  unsigned bad[kRounds], before[kRounds];  // first bad lane; entries before me in my warp
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    const unsigned local = static_cast<unsigned>(k * kThreads) + threadIdx.x;
    unsigned count = 0;
    bad[k] = kChunk;
    if (base + local < chunks) {
      bad[k] = first_nonfinite(v[k], 0xFFu);
      if (bad[k] < kChunk) atomicMin(&s_first_bad, local);
      codes[k] = policy.classify(v[k], 0xFFu);
      count = policy.count(codes[k]);
    }
    const unsigned inclusive = warp_inclusive_sum(count, lane);
    before[k] = inclusive - count;
    if (lane == 31) s_offset[k * kWarps + warp] = inclusive;
  }
  __syncthreads();
  if (warp == 0) {
    const unsigned sum = s_offset[lane];
    const unsigned inclusive = warp_inclusive_sum(sum, lane);
    s_offset[lane] = inclusive - sum;
    const unsigned long long aggregate =
        __shfl_sync(0xFFFFFFFFu, inclusive, 31) | (s_first_bad != kNone ? kFlag : 0ull);
    const unsigned long long prefix = look_back(status, tile, aggregate, lane);
    if (lane == 0) {
      s_prefix = prefix;
      if (tile + 1 == tiles(chunks)) state->total = combine(prefix, aggregate) & kCountMask;
    }
  }
  __syncthreads();

  const unsigned long long prefix = s_prefix;
  const bool earlier_bad = (prefix & kFlag) != 0;
  const unsigned first_bad = s_first_bad;
  unsigned long long stop_key = ~0ull;
  unsigned half = 0;
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    const unsigned local = static_cast<unsigned>(k * kThreads) + threadIdx.x;
    const std::size_t c = base + local;
    if (c >= chunks) continue;
    const unsigned long long pos = (prefix & kCountMask) + s_offset[k * kWarps + warp] + before[k];
    const bool full = pos + kChunk > policy.capacity;
    if (!earlier_bad && local < first_bad && !full) {
      policy.update(v[k], codes[k]);
      store<kVector>(r, c, v[k]);
      policy.emit(c, pos, codes[k], kChunk);
      half += __popc(codes[k].half);
    } else if (!earlier_bad) {
      // Capacity is tested before the values, as in the CPU twins.
      const unsigned long long why = full ? kChunk : bad[k];
      const unsigned long long key = (static_cast<unsigned long long>(c) << 36) | (why << 32) | pos;
      stop_key = key < stop_key ? key : stop_key;
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, stop_key, offset);
    stop_key = other < stop_key ? other : stop_key;
    half += __shfl_xor_sync(0xFFFFFFFFu, half, offset);
  }
  if (lane == 0 && stop_key != ~0ull) atomicMax(&state->stop_key_inv, ~stop_key);
  if (lane == 0 && half != 0) atomicAdd(&state->half, static_cast<unsigned long long>(half));
}

// One thread: the PassResult, and the last partial chunk when nothing stopped before it.
template <class Policy>
__global__ void finish_kernel(Policy policy, const float* u, float* r, std::size_t n,
                              std::size_t chunks, State* state) {
  PassResult result{chunks * kChunk, state->total, state->half, kNoBad};
  if (state->stop_key_inv != 0) {
    const unsigned long long key = ~state->stop_key_inv;
    const unsigned long long chunk = key >> 36;
    const unsigned why = static_cast<unsigned>(key >> 32) & 15u;
    result.processed = chunk * kChunk;
    result.count = key & kCountMask;
    if (why < kChunk) result.bad = chunk * kChunk + why;
  } else if (const std::size_t len = n - chunks * kChunk;
             len > 0 && result.count + len <= policy.capacity) {
    const std::size_t first = chunks * kChunk;
    const unsigned valid = (1u << len) - 1u;
    float v[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      v[j] = static_cast<std::size_t>(j) < len ? r[first + j] + u[first + j] : 0.0f;
    }
    const unsigned bad = first_nonfinite(v, valid);
    if (bad < kChunk) {
      result.bad = first + bad;
    } else {
      const Codes codes = policy.classify(v, valid);
      policy.update(v, codes);
      for (std::size_t j = 0; j < len; ++j) r[first + j] = v[j];
      policy.emit(chunks, result.count, codes, static_cast<int>(len));
      result.count += policy.count(codes);
      result.half += __popc(codes.half);
      result.processed = n;
    }
  }
  state->result = result;
}

// Zeroes the state, runs the tiles over the full chunks, then the finish kernel.
template <class Policy>
void run(const Policy& policy, const float* u, float* r, std::size_t n, void* workspace,
         cudaStream_t stream) {
  // Chunk numbers must fit the 28 bits of a stop key, counts the 32 of a tile word.
  GS_CHECK(n <= 0x7FFFFFFFu, "a codec pass covers at most 2^31 - 1 elements");
  const std::size_t chunks = n / kChunk;
  auto* state = static_cast<State*>(workspace);
  auto* status =
      reinterpret_cast<unsigned long long*>(static_cast<char*>(workspace) + kStatusOffset);
  GS_CUDA_CHECK(cudaMemsetAsync(workspace, 0, workspace_bytes(n), stream));
  if (chunks > 0) {
    const bool vector =
        ((reinterpret_cast<std::uintptr_t>(u) | reinterpret_cast<std::uintptr_t>(r)) & 15u) == 0;
    const auto blocks = static_cast<unsigned>(tiles(chunks));
    if (vector) {
      chunk_kernel<Policy, true>
          <<<blocks, kThreads, 0, stream>>>(policy, u, r, chunks, state, status);
    } else {
      chunk_kernel<Policy, false>
          <<<blocks, kThreads, 0, stream>>>(policy, u, r, chunks, state, status);
    }
    GS_CUDA_CHECK_LAUNCH();
  }
  finish_kernel<Policy><<<1, 1, 0, stream>>>(policy, u, r, n, chunks, state);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda::pass
