// launch.cuh: the launch shape of the one-thread-per-item kernels.
#pragma once

#include <cstddef>

#include "core/errors.h"

namespace gradshare::kernels::cuda {

inline constexpr int kBlockThreads = 256;

// Blocks of kBlockThreads covering `items` (at least one; the kernels check their bound).
inline unsigned grid_for(std::size_t items) {
  const std::size_t blocks = (items + kBlockThreads - 1) / kBlockThreads;
  GS_CHECK(blocks <= 0x7FFFFFFFu, "kernel over " + std::to_string(items) + " items is too large");
  return static_cast<unsigned>(blocks > 0 ? blocks : 1);
}

// The index of this thread among all of the grid's.
__device__ inline std::size_t global_index() {
  return std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
}

}  // namespace gradshare::kernels::cuda
