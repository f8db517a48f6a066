// codec_select.cu: threshold select with the residual update on the GPU, the twin of
// kernels/cpu's encode_select: r += u; every |r_j| >= tau becomes a signed 1-based index in
// increasing order and r_j -= copysign(tau, r_j). One pass (codec_pass.cuh): count per chunk,
// look-back scan across tiles, compaction into the index buffer.
#include "kernels/cuda/codec_pass.cuh"

namespace gradshare::kernels::cuda {
namespace {

struct SelectPolicy {
  float tau;
  std::int32_t* out;
  std::uint64_t first_index;
  unsigned long long capacity;

  __device__ pass::Codes classify(const float (&v)[pass::kChunk], unsigned valid) const {
    pass::Codes codes;
#pragma unroll
    for (int j = 0; j < pass::kChunk; ++j) {
      codes.fire |= (fabsf(v[j]) >= tau ? 1u : 0u) << j;
      codes.negative |= (signbit(v[j]) ? 1u : 0u) << j;
    }
    codes.fire &= valid;
    return codes;
  }
  __device__ unsigned count(const pass::Codes& codes) const { return __popc(codes.fire); }
  __device__ void update(float (&v)[pass::kChunk], const pass::Codes& codes) const {
#pragma unroll
    for (int j = 0; j < pass::kChunk; ++j) {
      if ((codes.fire >> j) & 1u) v[j] -= copysignf(tau, v[j]);
    }
  }
  __device__ void emit(std::size_t chunk, unsigned long long position, const pass::Codes& codes,
                       int /*len*/) const {
    std::int32_t* o = out + position;
    const std::uint64_t one_based = first_index + chunk * pass::kChunk + 1;
    for (unsigned m = codes.fire; m != 0; m &= m - 1) {
      const int j = __ffs(static_cast<int>(m)) - 1;
      const auto index = static_cast<std::int32_t>(one_based + static_cast<unsigned>(j));
      *o++ = ((codes.negative >> j) & 1u) ? -index : index;
    }
  }
};

}  // namespace

std::size_t pass_workspace_bytes(std::size_t n) { return pass::workspace_bytes(n); }

void enqueue_select(const float* u, float* r, std::size_t n, std::size_t first_index, float tau,
                    std::int32_t* out, std::size_t capacity, void* workspace, cudaStream_t stream) {
  pass::run(SelectPolicy{tau, out, first_index, capacity}, u, r, n, workspace, stream);
}

}  // namespace gradshare::kernels::cuda
