// cpu_kernels.cpp: the Kernels interface over kernels/cpu's scalar and AVX2 twins.
#include "codec/kernels.h"
#include "core/errors.h"

namespace gradshare::codec {
namespace {

namespace cpu = kernels::cpu;

class CpuKernels final : public Kernels {
 public:
  explicit CpuKernels(cpu::Isa isa) : isa_(isa) {}
  const char* name() const override { return cpu::isa_name(isa_); }
  SelectResult select(std::span<const float> u, std::span<float> r, std::size_t first_index,
                      float tau, std::span<std::int32_t> out) const override {
    return cpu::encode_select(isa_, u, r, first_index, tau, out);
  }
  BitmapResult bitmap(std::span<const float> u, std::span<float> r, float tau, HalfQuantum half,
                      std::span<std::uint8_t> bitmap) const override {
    return cpu::encode_bitmap(isa_, u, r, tau, half, bitmap);
  }
  AddResult add(std::span<const float> u, std::span<float> r) const override {
    return cpu::add_checked(isa_, u, r);
  }
  double clip(std::span<float> r, float limit) const override { return cpu::clip(isa_, r, limit); }

 private:
  cpu::Isa isa_;
};

}  // namespace

const Kernels& cpu_kernels() { return cpu_kernels(cpu::best_isa()); }

const Kernels& cpu_kernels(cpu::Isa isa) {
  GS_CHECK(cpu::isa_supported(isa), std::string("CPU lacks ") + cpu::isa_name(isa));
  static const CpuKernels scalar(cpu::Isa::kScalar);
  static const CpuKernels avx2(cpu::Isa::kAvx2);
  return isa == cpu::Isa::kAvx2 ? static_cast<const Kernels&>(avx2) : scalar;
}

}  // namespace gradshare::codec
