// kernels.h: the small interface through which the Encoder runs its dense passes, so a CUDA
// implementation (kernels/cuda, issue 9) can replace the CPU one and be tested against it.
// The result types are the CPU kernels' (kernels/cpu/codec_encode.h documents the semantics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/codec_encode.h"

namespace gradshare::codec {

using SelectResult = kernels::cpu::SelectResult;
using BitmapResult = kernels::cpu::BitmapResult;
using AddResult = kernels::cpu::AddResult;
using HalfQuantum = kernels::cpu::HalfQuantum;
using kernels::cpu::kNoBadIndex;

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual const char* name() const = 0;
  virtual SelectResult select(std::span<const float> u, std::span<float> r, std::size_t first_index,
                              float tau, std::span<std::int32_t> out) const = 0;
  virtual BitmapResult bitmap(std::span<const float> u, std::span<float> r, float tau,
                              HalfQuantum half, std::span<std::uint8_t> bitmap) const = 0;
  virtual AddResult add(std::span<const float> u, std::span<float> r) const = 0;
  virtual double clip(std::span<float> r, float limit) const = 0;
};

// The CPU kernels with the best instruction set of this machine (AVX2 or scalar).
const Kernels& cpu_kernels();
// A specific CPU twin (for tests comparing them); requires kernels::cpu::isa_supported(isa).
const Kernels& cpu_kernels(kernels::cpu::Isa isa);

}  // namespace gradshare::codec
